package codec_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/compactkit/compactkit/internal/codec"
)

// A snapshot section: a framed stream of columnar records with a checksum.
func ExampleWriter() {
	type column struct {
		_     struct{} `cbor:",toarray"`
		N     int
		IDs   codec.Strings
		Times []byte
	}
	ids := []string{"01JA", "01JB", "01JC"}
	times := []int64{1_000, 1_500, 2_000}

	var buf bytes.Buffer
	w, _ := codec.NewWriter(&buf, codec.Snapshot, codec.KindSection, 1)
	_ = w.Encode(column{N: len(ids), IDs: codec.PackStrings(ids), Times: codec.PackInts(times)})
	_ = w.Close()

	r, _ := codec.NewReader(&buf, codec.Snapshot, codec.KindSection)
	var c column
	_ = r.Decode(&c)
	gotIDs, _ := c.IDs.Unpack(c.N)
	gotTimes, _ := codec.UnpackInts[int64](c.Times, c.N)
	fmt.Println(gotIDs, gotTimes, r.Decode(&c) == io.EOF)
	// Output: [01JA 01JB 01JC] [1000 1500 2000] true
}
