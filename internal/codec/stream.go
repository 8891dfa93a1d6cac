package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readChunk is how much a Reader reads (and allocates) at a time for a
// frame whose length it has not yet seen the data for.
const readChunk = 1 << 20

// Writer writes a framed stream: a header, then one length-prefixed CBOR
// frame per [Writer.Encode], then, on [Writer.Close], an end marker and the
// CRC-32C of everything before it. Memory use is bounded by the largest
// frame.
type Writer struct {
	bw    *bufio.Writer
	crc   hash.Hash32
	c     *Codec
	kind  Kind
	err   error
	lenb  [binary.MaxVarintLen64]byte
	count int
}

// NewWriter writes the header of a stream of kind k and version to w.
func NewWriter(w io.Writer, c *Codec, k Kind, version byte) (*Writer, error) {
	sw := &Writer{bw: bufio.NewWriterSize(w, 64<<10), crc: crc32.New(castagnoli), c: c, kind: k}
	sw.write(AppendHeader(nil, k, version))
	return sw, sw.err
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.bw.Write(p); err != nil {
		w.err = fmt.Errorf("codec: write %s: %w", w.kind, err)
		return
	}
	_, _ = w.crc.Write(p) // hash.Hash never returns an error
}

// Encode writes v as one frame. A frame larger than the codec's MaxBytes is
// refused, since no reader would accept it.
func (w *Writer) Encode(v any) error {
	if w.err != nil {
		return w.err
	}
	b, err := w.c.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > w.c.limits.MaxBytes {
		return fmt.Errorf("codec: %s frame of %d bytes exceeds limit %d: %w", w.kind, len(b), w.c.limits.MaxBytes, ErrTooLarge)
	}
	n := binary.PutUvarint(w.lenb[:], uint64(len(b)))
	w.write(w.lenb[:n])
	w.write(b)
	w.count++
	return w.err
}

// Frames returns the number of frames written so far.
func (w *Writer) Frames() int { return w.count }

// Close writes the end marker and checksum and flushes. It does not close
// the underlying writer.
func (w *Writer) Close() error {
	w.write([]byte{0})
	if w.err != nil {
		return w.err
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], w.crc.Sum32())
	if _, err := w.bw.Write(sum[:]); err != nil {
		return fmt.Errorf("codec: write %s checksum: %w", w.kind, err)
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("codec: flush %s: %w", w.kind, err)
	}
	return nil
}

// Reader reads a stream written by [Writer]. Each frame is read into a
// buffer no larger than the codec's MaxBytes before it is decoded, so a
// corrupt length cannot make it allocate more.
//
// A Reader consumes exactly its own stream, up to and including the
// checksum, and nothing after it, so that a stream can be one section of a
// larger file: the bytes that follow are left for the caller.
type Reader struct {
	br      ByteReader
	crc     hash.Hash32
	c       *Codec
	kind    Kind
	version byte
	buf     []byte
	done    bool
	err     error
}

// ByteReader is what a [Reader] reads from: an [io.Reader] that also reads
// single bytes (a *bufio.Reader, a *bytes.Reader, a *bytes.Buffer, ...).
type ByteReader interface {
	io.Reader
	io.ByteReader
}

// Exact returns r as a [ByteReader] that never reads ahead: r itself if it
// reads single bytes, otherwise an adapter whose ReadByte reads exactly one
// byte from r. Frames are read whole, so only the few bytes of each frame
// length go through single-byte reads. Wrap r in a *bufio.Reader instead
// when nothing after the stream matters.
func Exact(r io.Reader) ByteReader {
	if br, ok := r.(ByteReader); ok {
		return br
	}
	return &exactReader{r: r}
}

type exactReader struct {
	r io.Reader
	b [1]byte
}

func (e *exactReader) Read(p []byte) (int, error) { return e.r.Read(p) }

func (e *exactReader) ReadByte() (byte, error) {
	if _, err := io.ReadFull(e.r, e.b[:]); err != nil {
		return 0, err
	}
	return e.b[0], nil
}

// NewReader reads and checks the header of a stream of kind k from r.
// It reads nothing past the stream's checksum (see [Exact]); to read
// several streams written one after the other (the sections of a
// snapshot), pass the same reader to each.
func NewReader(r io.Reader, c *Codec, k Kind) (*Reader, error) {
	sr := &Reader{br: Exact(r), crc: crc32.New(castagnoli), c: c, kind: k}
	var h [HeaderSize]byte
	if err := sr.readFull(h[:]); err != nil {
		return nil, fmt.Errorf("codec: %s header: %w", k, err)
	}
	v, _, err := ParseHeader(h[:], k)
	if err != nil {
		return nil, err
	}
	sr.version = v
	return sr, nil
}

// Version returns the version in the stream's header.
func (r *Reader) Version() byte { return r.version }

// Compact makes the reader decode the frames that follow in the compact
// form (see [Codec.Compact]), for a stream whose version writes it.
func (r *Reader) Compact() { r.c = r.c.Compact() }

func (r *Reader) readFull(p []byte) error {
	if _, err := io.ReadFull(r.br, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ErrTruncated
		}
		return err
	}
	_, _ = r.crc.Write(p)
	return nil
}

type byteReader struct{ r *Reader }

func (b byteReader) ReadByte() (byte, error) {
	c, err := b.r.br.ReadByte()
	if err != nil {
		return 0, err
	}
	_, _ = b.r.crc.Write([]byte{c})
	return c, nil
}

// Decode reads the next frame into v. At the end of the stream it verifies
// the checksum and returns [io.EOF]; a checksum mismatch returns an error
// wrapping [ErrChecksum]. After an error, every call returns that error.
func (r *Reader) Decode(v any) error {
	if r.err != nil {
		return r.err
	}
	r.err = r.decode(v)
	if r.err == io.EOF {
		return io.EOF
	}
	return r.err
}

func (r *Reader) decode(v any) error {
	if r.done {
		return io.EOF
	}
	n, err := binary.ReadUvarint(byteReader{r})
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("codec: %s frame length: %w", r.kind, ErrTruncated)
		}
		return fmt.Errorf("codec: %s frame length: %v: %w", r.kind, err, ErrMalformed)
	}
	if n == 0 {
		return r.finish()
	}
	if n > uint64(r.c.limits.MaxBytes) {
		return fmt.Errorf("codec: %s frame of %d bytes exceeds limit %d: %w", r.kind, n, r.c.limits.MaxBytes, ErrTooLarge)
	}
	// Grow the buffer as the data arrives rather than trusting the
	// length: a corrupt length must not allocate a huge buffer up front.
	buf := r.buf[:0]
	for uint64(len(buf)) < n {
		chunk := int(min(n-uint64(len(buf)), readChunk))
		buf = slices.Grow(buf, chunk)
		buf = buf[:len(buf)+chunk]
		if err := r.readFull(buf[len(buf)-chunk:]); err != nil {
			return fmt.Errorf("codec: %s frame: %w", r.kind, err)
		}
	}
	r.buf = buf
	return r.c.Unmarshal(buf, v)
}

func (r *Reader) finish() error {
	want := r.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r.br, sum[:]); err != nil {
		return fmt.Errorf("codec: %s checksum: %w", r.kind, ErrTruncated)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("codec: %s checksum %08x, computed %08x: %w", r.kind, got, want, ErrChecksum)
	}
	r.done = true
	return io.EOF
}

// Finish expects the end of the stream: it reads the end marker and
// verifies the checksum. A frame where the end should be is an error.
func (r *Reader) Finish() error {
	var extra struct{}
	err := r.Decode(&extra)
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return err
	default:
		r.err = fmt.Errorf("codec: %s: frames after the expected end: %w", r.kind, ErrMalformed)
		return r.err
	}
}
