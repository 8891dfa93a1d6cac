package main

import (
	"strings"
	"testing"
)

func TestListing(t *testing.T) {
	t.Setenv("GOWORK", "off")
	got, err := listing([]string{"testdata/mod"})
	if err != nil {
		t.Fatal(err)
	}
	want := `#   example.com/mod/lib    12
#   total                  12
pkg example.com/mod/lib, const Const Kind = 2
pkg example.com/mod/lib, const Untyped ideal-string = "u"
pkg example.com/mod/lib, func New(io.Reader, ...Kind) (*Pair[string, int], error)
pkg example.com/mod/lib, method (*Pair[K, V]) Get() V
pkg example.com/mod/lib, method (Kind) String() string
pkg example.com/mod/lib, type Alias = Pair[string, int]
pkg example.com/mod/lib, type Kind int
pkg example.com/mod/lib, type Pair[K comparable, V any] struct
pkg example.com/mod/lib, type Pair[K comparable, V any] struct, Key K
pkg example.com/mod/lib, type Pair[K comparable, V any] struct, Value V
pkg example.com/mod/lib, type Reader interface { Close, Read }
pkg example.com/mod/lib, type Reader interface, Read([]byte) (int, error)
pkg example.com/mod/lib, type Reader interface, embedded io.Closer
pkg example.com/mod/lib, var Var io.Reader
`
	if _, body, ok := strings.Cut(got, "fields not):\n"); !ok || body != want {
		t.Errorf("listing:\n%s\nwant, after the header:\n%s", got, want)
	}
}

func TestDiff(t *testing.T) {
	if d := diff("a\nb\n", "a\nb\n"); d != "" {
		t.Errorf("equal texts: %q", d)
	}
	if d := diff("a\nb\n", "a\nc\n"); d != "- b\n+ c\n" {
		t.Errorf("diff = %q", d)
	}
}
