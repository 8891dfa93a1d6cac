package codec

import (
	"fmt"
	"io"
)

// RestoreSection reads one snapshot section, a stream of kind
// [KindSection], from r and returns what build makes of it. r goes to
// [NewReader] unchanged, so nothing past the section's checksum is read
// and a reader shared by several sections serves the next one. build gets
// a [Decoder] over the stream and the stream's version; it checks the
// version, reads the section (with [Decoder.Run], one method per part)
// and returns the value it built. An error, of the stream or of build, is
// returned prefixed with what (such as "planner: restore") together with
// the zero T: a failed restore hands out nothing half-built.
func RestoreSection[T any](r io.Reader, what string, build func(d *Decoder, version byte) (T, error)) (T, error) {
	var v T
	sr, err := NewReader(r, Snapshot, KindSection)
	if err == nil {
		v, err = build(NewDecoder(sr), sr.Version())
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// Header reads a section's header frame into h, whose field that names
// the component component points at, and checks that it names want.
func Header(d *Decoder, h any, component *string, want string) error {
	if err := d.Decode("header", h); err != nil {
		return err
	}
	if *component != want {
		return Malformed("component %q, want %q", *component, want)
	}
	return nil
}

// Frames reads a run of n records named what (see [Decoder.Records]),
// frame after frame: each frame into *f, cleared first, where count
// points at f's field that holds the frame's record count; then it calls
// body with that count. body unpacks f's columns, checks [Decoder.Err]
// before it indexes them, then validates and builds the frame's records.
// Frames stops at the first error, the decoder's or body's, and returns
// it:
//
//	var f tombsFrame
//	return codec.Frames(d, "tombstones", h.Tombstones, &f, &f.N, func(n int) error {
//		kinds := codec.Ints[uint8](d, "kinds", f.Kinds, n)
//		targets := d.Strings("targets", f.Targets, n)
//		if err := d.Err(); err != nil {
//			return err
//		}
//		// validate and build n records
//		return nil
//	})
func Frames[F any](d *Decoder, what string, n uint64, f *F, count *int, body func(n int) error) error {
	for d.Records(what, n); d.More(); {
		var zero F
		*f = zero
		k := d.Frame(f, count)
		if d.Err() != nil {
			break
		}
		if err := body(k); err != nil {
			return err
		}
	}
	return d.Err()
}
