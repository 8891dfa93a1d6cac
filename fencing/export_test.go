package fencing

// Highest returns the highest token g accepted for resource, and whether
// any token has been accepted for it since g was created or the resource
// was last forgotten.
func Highest(g *Guard, resource string) (Token, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.tokens[resource]
	return t, ok
}
