package codec

import "fmt"

// Magic is the two bytes every compactkit message and stream starts with.
var Magic = [2]byte{'c', 'k'}

// HeaderSize is the size of a message header: magic, kind, version.
const HeaderSize = 4

// Kind identifies what an encoded message holds, so that a snapshot can
// never be decoded as a command or the other way round.
type Kind byte

// The kinds of message compactkit encodes.
const (
	KindCommand      Kind = 'C' // a state-machine command
	KindResult       Kind = 'R' // the result of applying a command
	KindPollRequest  Kind = 'Q' // a worker's poll request
	KindPollResponse Kind = 'P' // the answer to a poll
	KindSnapshot     Kind = 'S' // a state-machine snapshot (stream)
	KindBlockMeta    Kind = 'B' // block metadata
	KindJobPlan      Kind = 'J' // a job plan
	KindPlanUpdate   Kind = 'U' // a prepared plan update
	KindSection      Kind = 'X' // a component's snapshot section (stream)
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindCommand:
		return "command"
	case KindResult:
		return "result"
	case KindPollRequest:
		return "poll request"
	case KindPollResponse:
		return "poll response"
	case KindSnapshot:
		return "snapshot"
	case KindBlockMeta:
		return "block metadata"
	case KindJobPlan:
		return "job plan"
	case KindPlanUpdate:
		return "plan update"
	case KindSection:
		return "snapshot section"
	default:
		return fmt.Sprintf("kind(%#x)", byte(k))
	}
}

// AppendHeader appends the header of a message of the given kind and
// version to b.
func AppendHeader(b []byte, k Kind, version byte) []byte {
	return append(b, Magic[0], Magic[1], byte(k), version)
}

// ParseHeader checks that data starts with a header of kind k and returns
// the version and the body that follows. Versions are checked by the
// caller, which knows which ones it reads; version 0 is never valid.
func ParseHeader(data []byte, k Kind) (version byte, body []byte, err error) {
	if len(data) < HeaderSize {
		return 0, nil, fmt.Errorf("codec: %s header: %d bytes: %w", k, len(data), ErrTruncated)
	}
	if data[0] != Magic[0] || data[1] != Magic[1] {
		return 0, nil, fmt.Errorf("codec: %s header: bad magic %q: %w", k, data[:2], ErrMalformed)
	}
	if Kind(data[2]) != k {
		return 0, nil, fmt.Errorf("codec: expected %s, found %s: %w", k, Kind(data[2]), ErrMalformed)
	}
	if data[3] == 0 {
		return 0, nil, fmt.Errorf("codec: %s version 0: %w", k, ErrUnknownVersion)
	}
	return data[3], data[HeaderSize:], nil
}

// Encode returns header(k, version) followed by the encoding of v.
func (c *Codec) Encode(k Kind, version byte, v any) ([]byte, error) {
	body, err := c.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, HeaderSize+len(body))
	out = AppendHeader(out, k, version)
	return append(out, body...), nil
}

// Decode checks the header of data for kind k and a version accepted by
// accept, then decodes the body into v. It returns the version found.
func (c *Codec) Decode(data []byte, k Kind, accept func(version byte) bool, v any) (byte, error) {
	version, body, err := ParseHeader(data, k)
	if err != nil {
		return 0, err
	}
	if !accept(version) {
		return version, fmt.Errorf("codec: %s version %d: %w", k, version, ErrUnknownVersion)
	}
	if err := c.Unmarshal(body, v); err != nil {
		return version, err
	}
	return version, nil
}
