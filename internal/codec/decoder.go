package codec

import (
	"fmt"
	"io"
	"math"
)

// Decoder reads the frames of one snapshot section from a [Reader] and
// unpacks their columns. Like [bufio.Scanner], it remembers the first
// error: a restorer reads a frame and all of its columns, then checks
// [Decoder.Err] once. After an error every method does nothing and returns
// zero values (nil columns, no records), so code between the reads and the
// check must not index the columns it got; ranging over them is safe.
//
// Records come in runs of frames: [Decoder.Records] says how many records
// the next run holds (a count from the section's header), and
// [Decoder.Frame] reads one frame of it, checking that it holds from 1 to
// [FrameRecords] of the records not yet read:
//
//	d.Records("tombstones", h.Tombstones)
//	for d.More() {
//		var f tombsFrame
//		n := d.Frame(&f, &f.N)
//		kinds := codec.Ints[uint8](d, "kinds", f.Kinds, n)
//		targets := d.Strings("targets", f.Targets, n)
//		if err := d.Err(); err != nil {
//			return err
//		}
//		// validate and build n records
//	}
//	return d.Err()
//
// Every error names the run and the column, and wraps one of the
// package's sentinel errors.
type Decoder struct {
	r    *Reader
	what string // the run being read, for errors
	left uint64 // its records not read yet
	err  error
}

// NewDecoder returns a decoder that reads frames from r.
func NewDecoder(r *Reader) *Decoder { return &Decoder{r: r} }

// Err returns the first error the decoder met, or nil.
func (d *Decoder) Err() error { return d.err }

// fail records err unless an earlier error is recorded.
func (d *Decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// decode reads the next frame into v. The end of the stream where a frame
// should be is an error wrapping [ErrTruncated].
func (d *Decoder) decode(what string, v any) {
	if d.err != nil {
		return
	}
	switch err := d.r.Decode(v); err {
	case nil:
	case io.EOF:
		d.fail(fmt.Errorf("%s: stream ends early: %w", what, ErrTruncated))
	default:
		d.fail(fmt.Errorf("%s: %w", what, err))
	}
}

// Decode reads the next frame, one that is not part of a run of records
// (a header), into v, and returns the decoder's error.
func (d *Decoder) Decode(what string, v any) error {
	d.decode(what, v)
	return d.err
}

// Records starts a run of n records, named what in errors, to be read
// with [Decoder.Frame] while [Decoder.More] reports true. Records left
// unread in the previous run are forgotten.
func (d *Decoder) Records(what string, n uint64) {
	d.what, d.left = what, n
}

// More reports whether records of the run remain to be read and no error
// has occurred.
func (d *Decoder) More() bool { return d.err == nil && d.left > 0 }

// Left returns the number of records of the run not read yet.
func (d *Decoder) Left() uint64 { return d.left }

// Frame reads the next frame of the run into v, where n points at the
// field of v that holds the frame's record count, and returns that count.
// A count outside [1, min([FrameRecords], records left)] is an error
// wrapping [ErrMalformed]; after an error Frame returns 0.
func (d *Decoder) Frame(v any, n *int) int {
	d.decode(d.what, v)
	if d.err != nil {
		return 0
	}
	if *n < 1 || *n > FrameRecords || uint64(*n) > d.left {
		d.fail(Malformed("%s: frame of %d records, %d left", d.what, *n, d.left))
		return 0
	}
	d.left -= uint64(*n)
	return *n
}

// Strings unpacks a column of n strings (see [Strings.Unpack]).
func (d *Decoder) Strings(what string, c Strings, n int) []string {
	if d.err != nil {
		return nil
	}
	v, err := c.Unpack(n)
	if err != nil {
		d.fail(fmt.Errorf("%s: %s: %w", d.what, what, err))
	}
	return v
}

// Ints unpacks a column of n integers of type T (see [UnpackInts]).
func Ints[T Integer](d *Decoder, what string, b []byte, n int) []T {
	return IntsInto[T](d, what, b, n, nil)
}

// IntsInto is [Ints] unpacking into buf's array when it has room (see
// [AppendInts]), for a reader that decodes a column of every frame into
// the same buffer: the result is valid until buf is reused.
func IntsInto[T Integer](d *Decoder, what string, b []byte, n int, buf []T) []T {
	if d.err != nil {
		return nil
	}
	v, err := AppendInts(buf[:0], b, n)
	if err != nil {
		d.fail(fmt.Errorf("%s: %s: %w", d.what, what, err))
		return nil
	}
	return v
}

// Total returns the sum of counts: the number of records of the columns
// that flatten one list per record, counts giving each list's length. A
// negative count or a sum beyond an int is an error wrapping
// [ErrMalformed].
func Total[T Integer](d *Decoder, what string, counts []T) int {
	var sum uint64
	for _, c := range counts {
		if c < 0 || uint64(c) > math.MaxInt-sum {
			d.fail(Malformed("%s: %s: count %d after %d", d.what, what, c, sum))
			return 0
		}
		sum += uint64(c)
	}
	if d.err != nil {
		return 0
	}
	return int(sum)
}

// Finish expects the end of the stream after the last frame (see
// [Reader.Finish]) and returns the decoder's error.
func (d *Decoder) Finish() error {
	if d.err == nil {
		d.fail(d.r.Finish())
	}
	return d.err
}

// Run calls each section in turn, stopping at the first error, then
// expects the end of the stream (see [Decoder.Finish]). It is how a
// restorer with one method per section reads a whole stream.
func (d *Decoder) Run(sections ...func() error) error {
	for _, section := range sections {
		if err := section(); err != nil {
			d.fail(err)
			return err
		}
	}
	return d.Finish()
}

// Malformed returns an error that reads like fmt.Errorf(format, args...)
// and wraps [ErrMalformed], as well as any error format wraps with %w. It
// is how decoders report input that decodes but is not valid.
func Malformed(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args[:len(args):len(args)], ErrMalformed)...)
}
