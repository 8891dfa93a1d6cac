// Package snaptest holds the checks every snapshot decoder of compactkit
// must pass, for the packages' tests: damaged snapshots are refused with
// the right sentinel errors, never a panic or a silently different state.
package snaptest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/compactkit/compactkit/internal/codec"
)

// RejectsDamage checks that restore refuses every truncation of snap and
// every flip of bit 0 or 7 of its bytes (all of the first 512 bytes, then
// one byte in stride), an empty input with codec.ErrTruncated, a damaged
// checksum with codec.ErrChecksum and an unknown version with
// codec.ErrUnknownVersion. snap must be one snapshot stream (its header's
// version at byte 3, its checksum in the last four bytes).
func RejectsDamage(t testing.TB, snap []byte, stride int, restore func(io.Reader) error) {
	t.Helper()
	next := func(i int) int {
		if i < 512 {
			return i + 1
		}
		return i + max(1, stride)
	}
	for n := 0; n < len(snap); n = next(n) {
		if err := restore(bytes.NewReader(snap[:n])); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	for i := 0; i < len(snap); i = next(i) {
		for _, bit := range []byte{1, 0x80} {
			bad := bytes.Clone(snap)
			bad[i] ^= bit
			if err := restore(bytes.NewReader(bad)); err == nil {
				t.Fatalf("bit %#x flipped at %d: accepted", bit, i)
			}
		}
	}
	expect := func(what string, data []byte, want error) {
		t.Helper()
		if err := restore(bytes.NewReader(data)); !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", what, err, want)
		}
	}
	expect("empty input", nil, codec.ErrTruncated)
	bad := bytes.Clone(snap)
	bad[len(bad)-1] ^= 1
	expect("damaged checksum", bad, codec.ErrChecksum)
	bad = bytes.Clone(snap)
	bad[3] = 0xf9
	expect("unknown version", bad, codec.ErrUnknownVersion)
}

// Reseal recomputes the checksum of a stream whose body (everything but
// the last four bytes) was changed, so that the damage reaches the decoder
// instead of the checksum check.
func Reseal(body []byte) []byte {
	sum := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
	return binary.BigEndian.AppendUint32(bytes.Clone(body), sum)
}

// ResealedDamage changes sampled bytes of snap's body (one byte in step,
// by 1, 0xff and its offset), recomputes the checksum, and hands each
// damaged stream to try, which reports whether the decoder refused it. It
// returns how many were refused. A decoder must refuse some and, for the
// others, produce a usable state: try checks that.
func ResealedDamage(snap []byte, step int, try func(data []byte) (refused bool)) int {
	body := snap[:len(snap)-4]
	refused := 0
	for i := 4; i < len(body); i += max(1, step) {
		for _, delta := range []byte{1, 0xff, byte(i)} {
			bad := bytes.Clone(body)
			bad[i] += delta
			if try(Reseal(bad)) {
				refused++
			}
		}
	}
	return refused
}
