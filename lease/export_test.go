package lease

// WithFraction lets the tests set the renewal fraction (see withFraction).
var WithFraction = withFraction

// ErrStopped is the cause with which Stop cancels a keeper's context.
var ErrStopped = errStopped
