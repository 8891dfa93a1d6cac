package lease

// WithFraction lets the tests set the renewal fraction (see withFraction).
var WithFraction = withFraction
