// Command tool is a main package: not in the listing.
package main

// Exported is not listed.
func Exported() {}

func main() {}
