// Command api lists the exported API of compactkit's modules, one line per
// exported identifier, method and field with its signature, sorted, in the
// form of Go's own api/*.txt files:
//
//	pkg github.com/compactkit/compactkit/leader, func New(Log, *raftfsm.FSM, ...Option) *Service
//	pkg github.com/compactkit/compactkit/leader, method (*Service) Close() error
//	pkg github.com/compactkit/compactkit/leader, type Applied struct, Index uint64
//
// Packages are type-checked for GOOS=linux GOARCH=amd64 whatever the
// machine; internal packages, main packages and test files are left out. A
// header counts the exported identifiers of each package, methods
// included, fields not.
//
// Usage, from the repository's root (go.work in effect):
//
//	go run ./tools/api -o api/compactkit.txt . raftfsm/hraft ...   # write
//	go run ./tools/api -check api/compactkit.txt . raftfsm/hraft ... # compare
//
// Each argument is a module directory; every package under it is listed.
// With -check the command prints the lines that differ and exits 1 when
// the code's API is not the file's.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/types"
	"log"
	"os"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	out := flag.String("o", "", "write the listing to this file (default: standard output)")
	check := flag.String("check", "", "compare the listing with this file; exit 1 if they differ")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("api: ")
	if flag.NArg() == 0 {
		log.Fatal("usage: api [-o file | -check file] moduledir...")
	}
	text, err := listing(flag.Args())
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case *check != "":
		want, err := os.ReadFile(*check)
		if err != nil {
			log.Fatal(err)
		}
		if d := diff(string(want), text); d != "" {
			fmt.Fprintf(os.Stderr, "the exported API differs from %s (- file, + code):\n%s", *check, d)
			fmt.Fprintf(os.Stderr, "if the change is meant, rewrite the file with -o %s and add a CHANGELOG.md line\n", *check)
			os.Exit(1)
		}
	case *out != "":
		if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	default:
		fmt.Print(text)
	}
}

// listing type-checks every package of the module directories and returns
// the API file's text.
func listing(dirs []string) (string, error) {
	var lines []string
	counts := map[string]int{}
	var order []string
	for _, dir := range dirs {
		cfg := &packages.Config{
			Mode: packages.NeedName | packages.NeedTypes | packages.NeedFiles,
			Dir:  dir,
			Env:  append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"),
		}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			return "", fmt.Errorf("%s: %w", dir, err)
		}
		if packages.PrintErrors(pkgs) > 0 {
			return "", fmt.Errorf("%s: packages do not type-check", dir)
		}
		for _, p := range pkgs {
			if p.Name == "main" || isInternal(p.PkgPath) || p.Types == nil {
				continue
			}
			pl := pkgLines(p.Types)
			if _, seen := counts[p.PkgPath]; !seen {
				order = append(order, p.PkgPath)
			}
			for _, l := range pl {
				if !l.field {
					counts[p.PkgPath]++
				}
				lines = append(lines, l.text)
			}
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	slices.Sort(order)
	var b bytes.Buffer
	b.WriteString("# The exported API of compactkit's modules (GOOS=linux GOARCH=amd64), written by\n")
	b.WriteString("# tools/api: one line per exported identifier, method and field. CI fails when the\n")
	b.WriteString("# code differs from this file; an API change rewrites it and adds a CHANGELOG.md line.\n")
	b.WriteString("#\n# Exported identifiers per package (methods included, fields not):\n")
	width := len("total")
	for _, p := range order {
		width = max(width, len(p))
	}
	total := 0
	for _, p := range order {
		fmt.Fprintf(&b, "#   %-*s %5d\n", width, p, counts[p])
		total += counts[p]
	}
	fmt.Fprintf(&b, "#   %-*s %5d\n", width, "total", total)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func isInternal(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

type line struct {
	text  string
	field bool
}

// pkgLines returns the API lines of one package.
func pkgLines(pkg *types.Package) []line {
	q := func(other *types.Package) string {
		if other == pkg {
			return ""
		}
		return other.Name()
	}
	ts := func(t types.Type) string { return types.TypeString(t, q) }
	prefix := "pkg " + pkg.Path() + ", "
	var out []line
	add := func(field bool, format string, args ...any) {
		out = append(out, line{text: prefix + fmt.Sprintf(format, args...), field: field})
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			add(false, "const %s %s = %s", name, constType(o.Type(), ts), o.Val().ExactString())
		case *types.Var:
			add(false, "var %s %s", name, ts(o.Type()))
		case *types.Func:
			sig := o.Type().(*types.Signature)
			add(false, "func %s%s%s", name, typeParams(sig.TypeParams(), ts), signature(sig, ts))
		case *types.TypeName:
			if o.IsAlias() {
				add(false, "type %s = %s", name, ts(types.Unalias(o.Type())))
				continue
			}
			named, ok := o.Type().(*types.Named)
			if !ok {
				continue
			}
			head := "type " + name + typeParams(named.TypeParams(), ts)
			switch u := named.Underlying().(type) {
			case *types.Struct:
				add(false, "%s struct", head)
				for f := range u.Fields() {
					if !f.Exported() {
						continue
					}
					if f.Embedded() {
						add(true, "%s struct, embedded %s", head, ts(f.Type()))
					} else {
						add(true, "%s struct, %s %s", head, f.Name(), ts(f.Type()))
					}
				}
			case *types.Interface:
				// The method set in the type's line; the explicit methods
				// and the embedded types in lines of their own.
				var names []string
				for m := range u.Methods() {
					if m.Exported() {
						names = append(names, m.Name())
					} else {
						names = append(names, "unexported methods")
					}
				}
				slices.Sort(names)
				names = slices.Compact(names)
				add(false, "%s interface { %s }", head, strings.Join(names, ", "))
				for m := range u.ExplicitMethods() {
					if m.Exported() {
						add(false, "%s interface, %s%s", head, m.Name(), signature(m.Type().(*types.Signature), ts))
					}
				}
				for e := range u.EmbeddedTypes() {
					add(false, "%s interface, embedded %s", head, ts(e))
				}
			default:
				add(false, "%s %s", head, ts(u))
			}
			for m := range named.Methods() {
				if !m.Exported() {
					continue
				}
				sig := m.Type().(*types.Signature)
				recv := name
				if tp := named.TypeParams(); tp.Len() > 0 {
					var ps []string
					for p := range tp.TypeParams() {
						ps = append(ps, p.Obj().Name())
					}
					recv += "[" + strings.Join(ps, ", ") + "]"
				}
				if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
					recv = "*" + recv
				}
				add(false, "method (%s) %s%s", recv, m.Name(), signature(sig, ts))
			}
		}
	}
	return out
}

// constType names a constant's type as Go's api files do: ideal-int and
// so on for untyped constants.
func constType(t types.Type, ts func(types.Type) string) string {
	if b, ok := t.(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
		return "ideal-" + strings.TrimPrefix(b.Name(), "untyped ")
	}
	return ts(t)
}

// typeParams formats a type parameter list, or "" if there is none.
func typeParams(tp *types.TypeParamList, ts func(types.Type) string) string {
	if tp.Len() == 0 {
		return ""
	}
	var ps []string
	for p := range tp.TypeParams() {
		ps = append(ps, p.Obj().Name()+" "+ts(p.Constraint()))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}

// signature formats parameters and results without their names.
func signature(sig *types.Signature, ts func(types.Type) string) string {
	var b strings.Builder
	b.WriteByte('(')
	params := sig.Params()
	for i := range params.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := params.At(i).Type()
		if sig.Variadic() && i == params.Len()-1 {
			b.WriteString("..." + ts(t.(*types.Slice).Elem()))
		} else {
			b.WriteString(ts(t))
		}
	}
	b.WriteByte(')')
	res := sig.Results()
	switch {
	case res.Len() == 1:
		b.WriteString(" " + ts(res.At(0).Type()))
	case res.Len() > 1:
		var rs []string
		for r := range res.Variables() {
			rs = append(rs, ts(r.Type()))
		}
		b.WriteString(" (" + strings.Join(rs, ", ") + ")")
	}
	return b.String()
}

// diff returns the lines only in want (prefixed -) and only in got (+),
// or "" if the texts are equal.
func diff(want, got string) string {
	if want == got {
		return ""
	}
	w := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	g := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, l := range s {
			m[l] = true
		}
		return m
	}
	wm, gm := in(w), in(g)
	var b strings.Builder
	for _, l := range w {
		if !gm[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !wm[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	if b.Len() == 0 {
		b.WriteString("(the lines are the same, in another order)\n")
	}
	return b.String()
}
