package compactkit

import "github.com/compactkit/compactkit/internal/codec"

// EncodeVersion1 writes v in encoding version 1, the compact form, for the
// golden files of that version.
func EncodeVersion1(v any) ([]byte, error) {
	var k codec.Kind
	switch v.(type) {
	case *PollRequest:
		k = codec.KindPollRequest
	case *PollResponse:
		k = codec.KindPollResponse
	case *BlockMeta:
		k = codec.KindBlockMeta
	case *JobPlan:
		k = codec.KindJobPlan
	case *PlanUpdate:
		k = codec.KindPlanUpdate
	}
	return encode(k, 1, v)
}
