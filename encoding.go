package compactkit

import (
	"github.com/compactkit/compactkit/internal/codec"
)

// encodingVersion is the version of the binary encoding written by this
// release for the types of this package. Decoders read every version from
// 1 up to it. Version 2 writes every field of every message, whatever its
// value, so that the number of fields depends only on the version; version
// 1, the compact form (see the internal/codec package), writes optional
// trailing fields only when set.
const encodingVersion byte = 2

// formOf returns the codec of encoding version v.
func formOf(v byte) *codec.Codec {
	if v == 1 {
		return codec.Default.Compact()
	}
	return codec.Default
}

// encode writes v (header kind k) in encoding version version.
func encode(k codec.Kind, version byte, v any) ([]byte, error) {
	return formOf(version).Encode(k, version, v)
}

func readsVersion(v byte) bool { return v >= 1 && v <= encodingVersion }

// validator is a value that can check itself after decoding.
type validator interface{ Validate() error }

// decodeValid decodes data (header kind k) into a fresh value and validates
// it; on any error *dst is left unchanged.
func decodeValid[T any, P interface {
	*T
	validator
}](data []byte, k codec.Kind, dst P) error {
	version, _, err := codec.ParseHeader(data, k)
	if err != nil {
		return err
	}
	var v T
	if _, err := formOf(version).Decode(data, k, readsVersion, &v); err != nil {
		return err
	}
	if err := P(&v).Validate(); err != nil {
		return err
	}
	*dst = v
	return nil
}

// MarshalBinary encodes r with a versioned header. Equal requests encode
// to identical bytes.
func (r *PollRequest) MarshalBinary() ([]byte, error) {
	return encode(codec.KindPollRequest, encodingVersion, r)
}

// UnmarshalBinary decodes and validates a request encoded by
// [PollRequest.MarshalBinary]. Malformed input returns an error wrapping
// ErrMalformed, ErrTruncated, ErrUnknownVersion, ErrTooLarge or a validation
// error, and leaves r unchanged.
func (r *PollRequest) UnmarshalBinary(data []byte) error {
	return decodeValid(data, codec.KindPollRequest, r)
}

// MarshalBinary encodes r with a versioned header.
func (r *PollResponse) MarshalBinary() ([]byte, error) {
	return encode(codec.KindPollResponse, encodingVersion, r)
}

// UnmarshalBinary decodes and validates a response encoded by
// [PollResponse.MarshalBinary]; on error r is unchanged.
func (r *PollResponse) UnmarshalBinary(data []byte) error {
	return decodeValid(data, codec.KindPollResponse, r)
}

// MarshalBinary encodes b with a versioned header.
func (b *BlockMeta) MarshalBinary() ([]byte, error) {
	return encode(codec.KindBlockMeta, encodingVersion, b)
}

// UnmarshalBinary decodes and validates block metadata encoded by
// [BlockMeta.MarshalBinary]; on error b is unchanged.
func (b *BlockMeta) UnmarshalBinary(data []byte) error {
	return decodeValid(data, codec.KindBlockMeta, b)
}

// MarshalBinary encodes p with a versioned header.
func (p *JobPlan) MarshalBinary() ([]byte, error) {
	return encode(codec.KindJobPlan, encodingVersion, p)
}

// UnmarshalBinary decodes and validates a plan encoded by
// [JobPlan.MarshalBinary]; on error p is unchanged.
func (p *JobPlan) UnmarshalBinary(data []byte) error {
	return decodeValid(data, codec.KindJobPlan, p)
}

// MarshalBinary encodes u with a versioned header.
func (u *PlanUpdate) MarshalBinary() ([]byte, error) {
	return encode(codec.KindPlanUpdate, encodingVersion, u)
}

// UnmarshalBinary decodes and validates an update encoded by
// [PlanUpdate.MarshalBinary]; on error u is unchanged.
func (u *PlanUpdate) UnmarshalBinary(data []byte) error {
	return decodeValid(data, codec.KindPlanUpdate, u)
}
