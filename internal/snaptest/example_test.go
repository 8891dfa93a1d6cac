package snaptest_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/snaptest"
)

// Reseal lets a test damage a stream's body and still pass the checksum,
// so that the decoder's own validation is what refuses the damage.
func ExampleReseal() {
	var b bytes.Buffer
	w, _ := codec.NewWriter(&b, codec.Default, codec.KindSection, 1)
	_ = w.Encode([]int{1, 2, 3})
	_ = w.Close()
	stream := b.Bytes()

	bad := bytes.Clone(stream)
	bad[len(bad)-6] = 0x04 // the last element: [1 2 3] becomes [1 2 4]
	read := func(data []byte) error {
		r, err := codec.NewReader(bytes.NewReader(data), codec.Default, codec.KindSection)
		if err != nil {
			return err
		}
		var v []int
		if err := r.Decode(&v); err != nil {
			return err
		}
		return r.Finish()
	}
	fmt.Println(errors.Is(read(bad), codec.ErrChecksum))
	fmt.Println(errors.Is(read(snaptest.Reseal(bad[:len(bad)-4])), codec.ErrChecksum))
	// Output:
	// true
	// false
}
