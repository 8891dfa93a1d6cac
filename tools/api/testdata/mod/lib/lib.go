// Package lib has one declaration of each kind the API listing writes.
package lib

import "io"

// Const is typed; Untyped is not.
const (
	Const   Kind = 2
	Untyped      = "u"
)

// Var is a variable.
var Var io.Reader

// Kind is a named basic type.
type Kind int

// String is a method on a value receiver.
func (Kind) String() string { return "" }

// Pair is generic.
type Pair[K comparable, V any] struct {
	Key   K
	Value V
	note  string
}

// Get is a method of a generic type.
func (p *Pair[K, V]) Get() V { return p.Value }

// Reader is an interface.
type Reader interface {
	io.Closer
	Read(p []byte) (n int, err error)
}

// Alias is an alias.
type Alias = Pair[string, int]

// New is variadic.
func New(r io.Reader, opts ...Kind) (*Pair[string, int], error) { return nil, nil }

type hidden struct{}

// Exported is a method of an unexported type: not in the listing.
func (hidden) Exported() {}

func unexported() {}
