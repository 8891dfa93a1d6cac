package raftfsm

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/codec"
)

// sliceOf draws nil, an empty slice or a few elements, so that the three
// encode alike and clonePoll must give what decoding gives for each.
func sliceOf[T any](t *rapid.T, label string, elem *rapid.Generator[T]) []T {
	switch rapid.IntRange(0, 2).Draw(t, label+" form") {
	case 0:
		return nil
	case 1:
		return []T{}
	}
	return rapid.SliceOfN(elem, 1, 3).Draw(t, label)
}

// str draws short strings, some of them not valid UTF-8.
var str = rapid.OneOf(rapid.StringN(0, 6, -1), rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 4), func(b []byte) string { return string(b) }))

func genBlock(t *rapid.T) ck.BlockMeta {
	return ck.BlockMeta{
		ID: str.Draw(t, "id"), Tenant: str.Draw(t, "tenant"), Shard: rapid.Uint32().Draw(t, "shard"),
		Level: rapid.Uint32().Draw(t, "level"), MinTime: rapid.Int64().Draw(t, "min"), MaxTime: rapid.Int64().Draw(t, "max"),
		Size: rapid.Int64().Draw(t, "size"),
		Datasets: sliceOf(t, "datasets", rapid.Custom(func(t *rapid.T) ck.DatasetMeta {
			return ck.DatasetMeta{Tenant: str.Draw(t, "tenant"), Name: str.Draw(t, "name"), Size: rapid.Int64().Draw(t, "size"),
				Records: rapid.Int64().Draw(t, "records"), MinTime: rapid.Int64().Draw(t, "min"), MaxTime: rapid.Int64().Draw(t, "max")}
		})),
	}
}

func genPoll(t *rapid.T) *Poll {
	p := &Poll{WorkerID: str.Draw(t, "worker"), Seq: rapid.Uint64().Draw(t, "seq")}
	p.Reports = sliceOf(t, "reports", rapid.Custom(func(t *rapid.T) Report {
		return Report{Job: str.Draw(t, "job"), Token: fencing.Token(rapid.Uint64().Draw(t, "token")), Status: ck.ReportStatus(rapid.Uint8().Draw(t, "status"))}
	}))
	p.Update = ck.PlanUpdate{Time: rapid.Int64().Draw(t, "time"), TokenIndex: rapid.Uint64().Draw(t, "token index")}
	p.Update.Changes = sliceOf(t, "changes", rapid.Custom(func(t *rapid.T) ck.Change {
		c := ck.Change{Kind: ck.ChangeKind(rapid.Uint8().Draw(t, "kind")), Job: str.Draw(t, "job"), Version: rapid.Uint64().Draw(t, "version"),
			Token: fencing.Token(rapid.Uint64().Draw(t, "token")), Worker: str.Draw(t, "worker"), Reason: str.Draw(t, "reason")}
		if rapid.Bool().Draw(t, "plan") {
			c.Plan = &ck.JobPlan{Name: str.Draw(t, "name"), Tenant: str.Draw(t, "tenant"), Shard: rapid.Uint32().Draw(t, "shard"),
				Level: rapid.Uint32().Draw(t, "level"), Sources: sliceOf(t, "sources", str),
				Tombstones: sliceOf(t, "tombstones", rapid.Custom(func(t *rapid.T) ck.Tombstone {
					return ck.Tombstone{Kind: ck.TombstoneKind(rapid.Uint8().Draw(t, "kind")), Target: str.Draw(t, "target")}
				}))}
		}
		c.Outputs = sliceOf(t, "outputs", rapid.Custom(genBlock))
		return c
	}))
	return p
}

// TestDecodedPoll checks that decodedPoll tells whether the poll's
// full-form encoding decodes, gives exactly what decoding gives (empty
// lists and all), and shares no slice or plan with the poll: Apply may then
// take the copy of a poll this replica encoded instead of decoding its
// entry.
func TestDecodedPoll(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPoll(t)
		cmd := &Command{Time: rapid.Int64().Draw(t, "time"), Poll: p}
		data, err := cmd.MarshalVersion(fullFormVersion)
		require.NoError(t, err)
		var d Command
		var pol *policyCommandRec
		err = codecOf(codec.Default, fullFormVersion).UnmarshalItems(data[codec.HeaderSize:len(data)-commandChecksumSize], 10, d.items(&pol)...)
		c, ok := decodedPoll(p, true)
		require.Equal(t, err == nil, ok, "decodedPoll tells whether decoding succeeds (%v)", err)
		if !ok {
			return
		}
		require.Equal(t, d.Poll, c, "the copy is what decoding gives")
		for i := range p.Reports {
			require.NotSame(t, &p.Reports[i], &c.Reports[i])
		}
		for i := range p.Update.Changes {
			pc, cc := &p.Update.Changes[i], &c.Update.Changes[i]
			require.NotSame(t, pc, cc)
			if pc.Plan != nil {
				require.NotSame(t, pc.Plan, cc.Plan)
				for j := range pc.Plan.Sources {
					require.NotSame(t, &pc.Plan.Sources[j], &cc.Plan.Sources[j])
				}
				for j := range pc.Plan.Tombstones {
					require.NotSame(t, &pc.Plan.Tombstones[j], &cc.Plan.Tombstones[j])
				}
			}
			for j := range pc.Outputs {
				require.NotSame(t, &pc.Outputs[j], &cc.Outputs[j])
				for k := range pc.Outputs[j].Datasets {
					require.NotSame(t, &pc.Outputs[j].Datasets[k], &cc.Outputs[j].Datasets[k])
				}
			}
		}
	})
}

// A list longer than the decoder takes is not kept: decoding refuses it.
func TestDecodedPollLimits(t *testing.T) {
	limit := codec.Default.Limits().MaxArrayElements
	for _, n := range []int{limit, limit + 1} {
		p := &Poll{WorkerID: "w", Seq: 1, Update: ck.PlanUpdate{Changes: []ck.Change{{Job: "j", Plan: &ck.JobPlan{Sources: make([]string, n)}}}}}
		data, err := (&Command{Poll: p}).MarshalVersion(fullFormVersion)
		require.NoError(t, err)
		var d Command
		var pol *policyCommandRec
		err = codecOf(codec.Default, fullFormVersion).UnmarshalItems(data[codec.HeaderSize:len(data)-commandChecksumSize], 10, d.items(&pol)...)
		_, ok := decodedPoll(p, true)
		require.Equal(t, n <= limit, ok, "%d sources", n)
		require.Equal(t, n <= limit, err == nil, "%d sources: %v", n, err)
	}
}

// TestValidPollStrings: validation refuses a poll with any string that is
// not valid UTF-8, so that Encode keeps its copy without checking them
// (see proposal). Each poll is well-formed; then each of its strings in
// turn is made not UTF-8.
func TestValidPollStrings(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.SampledFrom([]string{"a", "j-1.x_2"})
		block := func(t *rapid.T) ck.BlockMeta {
			return ck.BlockMeta{ID: "b/" + name.Draw(t, "id"), Tenant: name.Draw(t, "tenant"),
				Datasets: []ck.DatasetMeta{{Name: name.Draw(t, "dataset")}}}
		}
		p := &Poll{WorkerID: name.Draw(t, "worker"), Seq: 1}
		p.Reports = []Report{{Job: "r-" + name.Draw(t, "job"), Token: 1, Status: ck.ReportInProgress}}
		p.Update.Changes = []ck.Change{
			{Kind: ck.ChangeAdd, Job: "add", Plan: &ck.JobPlan{Name: "add", Tenant: name.Draw(t, "tenant"), Sources: []string{"b/s"},
				Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "b/t"}}}},
			{Kind: ck.ChangeAssign, Job: "add", Token: 1, Worker: name.Draw(t, "assignee")},
			{Kind: ck.ChangeComplete, Job: "done", Token: 1, Outputs: []ck.BlockMeta{block(t)}},
			{Kind: ck.ChangeFail, Job: "failed", Token: 1, Reason: name.Draw(t, "reason")},
		}
		require.NoError(t, (&Command{Poll: p}).Validate(), "the poll before a string is replaced")
		add, out := &p.Update.Changes[0], &p.Update.Changes[2].Outputs[0]
		fields := []*string{&p.WorkerID, &p.Reports[0].Job, &p.Update.Changes[1].Worker, &p.Update.Changes[3].Reason,
			&add.Job, &add.Plan.Name, &add.Plan.Tenant, &add.Plan.Sources[0], &add.Plan.Tombstones[0].Target,
			&out.ID, &out.Tenant, &out.Datasets[0].Name, &out.Datasets[0].Tenant}
		for _, f := range fields {
			was := *f
			*f += "\xff"
			_, strsOK := decodedPoll(p, true)
			require.False(t, strsOK)
			require.Error(t, (&Command{Poll: p}).Validate(), "a poll with %q validates", *f)
			*f = was
		}
	})
}
