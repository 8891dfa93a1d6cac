package compactkit_test

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/internal/ident"
)

var update = flag.Bool("update", false, "rewrite golden files and seed corpora")

type codecValue interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
	Validate() error
}

// roundTrip checks that a valid value survives encode → decode unchanged,
// and that its encoding is stable.
func roundTrip[T any, P interface {
	*T
	codecValue
}](t *rapid.T, v T) {
	b, err := P(&v).MarshalBinary()
	require.NoError(t, err)
	var got T
	require.NoError(t, P(&got).UnmarshalBinary(b))
	require.Equal(t, v, got)
	b2, err := P(&got).MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, b, b2, "re-encoding changed the bytes")
}

func TestRoundTrip(t *testing.T) {
	t.Run("BlockMeta", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) { roundTrip(t, genBlock().Draw(t, "v")) })
	})
	t.Run("JobPlan", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) { roundTrip(t, genPlan().Draw(t, "v")) })
	})
	t.Run("PollRequest", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) { roundTrip(t, genRequest().Draw(t, "v")) })
	})
	t.Run("PollResponse", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) { roundTrip(t, genResponse().Draw(t, "v")) })
	})
	t.Run("PlanUpdate", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) { roundTrip(t, genPlanUpdate().Draw(t, "v")) })
	})
}

func TestNilAndEmptyEncodeAlike(t *testing.T) {
	a := ck.PollRequest{WorkerID: "w", Seq: 1}
	b := ck.PollRequest{WorkerID: "w", Seq: 1, Updates: []ck.StatusUpdate{}}
	ea, err := a.MarshalBinary()
	require.NoError(t, err)
	eb, err := b.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, ea, eb)
}

// Golden values: one fixed, representative value per encoded type. Their
// bytes are committed under testdata/golden; a change of encoding shows up
// as a failing test and must be a deliberate act (run with -update).
func goldenValues() map[string]codecValue {
	block := ck.BlockMeta{
		ID: "01JD8ZQ8Y0S1G6N9V3C2X7K4PB", Tenant: "", Shard: 7, Level: 0,
		MinTime: 1_700_000_000_000_000_000, MaxTime: 1_700_000_010_000_000_000, Size: 40960,
		Datasets: []ck.DatasetMeta{
			{Tenant: "acme", Name: "checkout", Size: 20480, Records: 120, MinTime: 1_700_000_000_000_000_000, MaxTime: 1_700_000_009_000_000_000},
			{Tenant: "globex", Name: "search", Size: 20480, Records: 80, MinTime: 1_700_000_001_000_000_000, MaxTime: 1_700_000_010_000_000_000},
		},
	}
	plan := ck.JobPlan{
		Name: "L0-acme-7-00a1b2c3d4e5f607", Tenant: "acme", Shard: 7, Level: 0,
		Sources:    []string{"01JD8ZQ8Y0S1G6N9V3C2X7K4PB", "01JD8ZQ9A4V0W1X2Y3Z4A5B6C7"},
		Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "01JD8ZQ0000000000000000000"}, {Kind: ck.TombstonePrefix, Target: "blocks/L1-acme-7-0011223344556677/42/"}},
	}
	out := block
	out.ID, out.Tenant, out.Level = ck.OutputID(plan.Name, 57, 0), "acme", 1
	out.Datasets = []ck.DatasetMeta{{Name: "checkout", Size: 20000, Records: 120, MinTime: 1_700_000_000_000_000_000, MaxTime: 1_700_000_009_000_000_000}}
	return map[string]codecValue{
		"block_meta": &block,
		"job_plan":   &plan,
		"poll_request": &ck.PollRequest{WorkerID: "worker-1", Seq: 12, FreeSlots: 3, Updates: []ck.StatusUpdate{
			{Job: plan.Name, Token: 57, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out}},
			{Job: "L0-acme-3-0f0e0d0c0b0a0908", Token: 60, Status: ck.ReportInProgress},
			{Job: "L1-acme-3-0f0e0d0c0b0a0908", Token: 61, Status: ck.ReportFailure, Reason: "source corrupt"},
		}},
		"poll_response": &ck.PollResponse{Jobs: []ck.JobReply{
			{Job: plan.Name, Outcome: ck.OutcomeCompleted, Token: 57},
			{Job: "L0-acme-3-0f0e0d0c0b0a0908", Outcome: ck.OutcomeRenewed, Token: 60, Deadline: 1_700_000_025_000_000_000, Lease: 15_000_000_000},
			{Job: "L1-acme-3-0f0e0d0c0b0a0908", Outcome: ck.OutcomeAccepted, Token: 61},
			{Job: plan.Name, Outcome: ck.OutcomeAssigned, Token: 99, Deadline: 1_700_000_025_000_000_000, Lease: 15_000_000_000, Plan: &plan},
		}},
		"plan_update": &ck.PlanUpdate{Time: 1_700_000_010_000_000_000, Changes: []ck.Change{
			{Kind: ck.ChangeAdd, Job: plan.Name, Plan: &plan},
			{Kind: ck.ChangeAssign, Job: plan.Name, Worker: "worker-1"},
			{Kind: ck.ChangeRenew, Job: "L0-acme-3-0f0e0d0c0b0a0908", Version: 60, Token: 60, Worker: "worker-1"},
			{Kind: ck.ChangeComplete, Job: "L0-globex-3-0f0e0d0c0b0a0908", Version: 57, Token: 57, Worker: "worker-1", Outputs: []ck.BlockMeta{out}},
			{Kind: ck.ChangeExclude, Job: "L1-acme-3-0f0e0d0c0b0a0908", Version: 30},
		}},
	}
}

// TestGolden checks the encoding this release writes (version 2, under
// testdata/golden/v2) and that version 1's files (testdata/golden) still
// decode to the same values and re-encode, in version 1, to the same bytes.
func TestGolden(t *testing.T) {
	for name, v := range goldenValues() {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, v.Validate())
			got, err := v.MarshalBinary()
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden", "v2", name+".bin")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
				writeSeed(t, fuzzTargetOf[name], got)
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "golden file missing: run go test -run TestGolden -update")
			require.Equal(t, want, got, "the encoding of %s changed; if deliberate, bump encodingVersion and run with -update", name)

			v1, err := os.ReadFile(filepath.Join("testdata", "golden", name+".bin"))
			require.NoError(t, err)
			dec := reflect.New(reflect.TypeOf(v).Elem()).Interface().(codecValue)
			require.NoError(t, dec.UnmarshalBinary(v1))
			same, err := dec.MarshalBinary()
			require.NoError(t, err)
			require.Equal(t, got, same, "version 1 decodes to the golden value")
			again, err := ck.EncodeVersion1(dec)
			require.NoError(t, err)
			require.Equal(t, v1, again, "version 1 re-encodes byte-identically")
			require.GreaterOrEqual(t, len(got), len(v1), "version 2 writes every field version 1 writes, and those it leaves out")
		})
	}
}

var fuzzTargetOf = map[string]string{
	"block_meta":    "FuzzBlockMeta",
	"job_plan":      "FuzzJobPlan",
	"poll_request":  "FuzzPollRequest",
	"poll_response": "FuzzPollResponse",
	"plan_update":   "FuzzPlanUpdate",
}

// writeSeed commits an input to the fuzz target's seed corpus.
func writeSeed(t *testing.T, target string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "golden"), []byte(body), 0o644))
}

func TestDecodeErrors(t *testing.T) {
	good, err := goldenValues()["poll_request"].MarshalBinary()
	require.NoError(t, err)
	cases := map[string]struct {
		data []byte
		want error
	}{
		"empty":           {nil, ck.ErrTruncated},
		"header only":     {good[:4], ck.ErrTruncated},
		"truncated body":  {good[:len(good)-3], ck.ErrTruncated},
		"bad magic":       {append([]byte("xx"), good[2:]...), ck.ErrMalformed},
		"wrong kind":      {append([]byte{'c', 'k', 'B'}, good[3:]...), ck.ErrMalformed},
		"unknown version": {append([]byte{'c', 'k', 'Q', 9}, good[4:]...), ck.ErrUnknownVersion},
		"version zero":    {append([]byte{'c', 'k', 'Q', 0}, good[4:]...), ck.ErrUnknownVersion},
		"trailing bytes":  {append(append([]byte(nil), good...), 0x00), ck.ErrMalformed},
		"not an array":    {[]byte{'c', 'k', 'Q', 1, 0x01}, ck.ErrMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before := ck.PollRequest{WorkerID: "keep", Seq: 1}
			r := before
			err := r.UnmarshalBinary(c.data)
			require.ErrorIs(t, err, c.want)
			require.Equal(t, before, r, "a failed decode must leave the value unchanged")
		})
	}
}

func TestDecodeRejectsInvalidValues(t *testing.T) {
	// Well-formed encodings of invalid values are refused by validation.
	r := ck.PollRequest{WorkerID: "w", Seq: 1, FreeSlots: -1}
	b, err := r.MarshalBinary() // encoding does not validate
	require.NoError(t, err)
	var got ck.PollRequest
	require.ErrorIs(t, got.UnmarshalBinary(b), ident.ErrNegative)
}

func TestDecodeLimits(t *testing.T) {
	// An array claiming more elements than the limit is refused before any
	// allocation of that size.
	data := []byte{'c', 'k', 'Q', 1, 0x84, 0x61, 'w', 0x01, 0x9b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	var r ck.PollRequest
	err := r.UnmarshalBinary(data)
	require.Error(t, err)
	require.True(t, errors.Is(err, ck.ErrTooLarge) || errors.Is(err, ck.ErrMalformed) || errors.Is(err, ck.ErrTruncated), err)
}

func fuzzDecoder[T any, P interface {
	*T
	codecValue
}](f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{'c', 'k'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v T
		if err := P(&v).UnmarshalBinary(data); err != nil {
			return
		}
		// Whatever decodes is valid and re-encodes canonically.
		require.NoError(t, P(&v).Validate())
		b, err := P(&v).MarshalBinary()
		require.NoError(t, err)
		var w T
		require.NoError(t, P(&w).UnmarshalBinary(b))
		b2, err := P(&w).MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, b, b2)
	})
}

func FuzzBlockMeta(f *testing.F)    { fuzzDecoder[ck.BlockMeta](f) }
func FuzzJobPlan(f *testing.F)      { fuzzDecoder[ck.JobPlan](f) }
func FuzzPollRequest(f *testing.F)  { fuzzDecoder[ck.PollRequest](f) }
func FuzzPollResponse(f *testing.F) { fuzzDecoder[ck.PollResponse](f) }
func FuzzPlanUpdate(f *testing.F)   { fuzzDecoder[ck.PlanUpdate](f) }
