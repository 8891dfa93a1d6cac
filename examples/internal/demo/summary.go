package demo

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Bytes formats a byte count.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// WriteSummary prints the report's summary table and then extra lines
// (label, value) of the host's own.
func WriteSummary(out io.Writer, rep *Report, extra ...[2]string) {
	c := rep.Config
	fmt.Fprintf(out, "\n%d segments · %d tenants · %d shards · %d workers × %d jobs (%d cut off mid-run)\n\n",
		c.Data.Segments, c.Data.Tenants, c.Data.Shards, c.Workers, c.Concurrency, c.PartitionWorkers)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tbefore (ingested)\t\t\tafter\t\t\t")
	fmt.Fprintln(tw, "level\tblocks\tobjects\tbytes\tblocks\tobjects\tbytes\t")
	maxLevel := uint32(0)
	for _, l := range append(append([]LevelCount(nil), rep.Before...), rep.After...) {
		maxLevel = max(maxLevel, l.Level)
	}
	find := func(ls []LevelCount, lvl uint32) LevelCount {
		for _, l := range ls {
			if l.Level == lvl {
				return l
			}
		}
		return LevelCount{Level: lvl}
	}
	var tb, ta LevelCount
	for lvl := uint32(0); lvl <= maxLevel; lvl++ {
		b, a := find(rep.Before, lvl), find(rep.After, lvl)
		fmt.Fprintf(tw, "L%d\t%d\t%d\t%s\t%d\t%d\t%s\t\n", lvl, b.Blocks, b.Objects, Bytes(b.Bytes), a.Blocks, a.Objects, Bytes(a.Bytes))
		tb.Blocks, tb.Objects, tb.Bytes = tb.Blocks+b.Blocks, tb.Objects+b.Objects, tb.Bytes+b.Bytes
		ta.Blocks, ta.Objects, ta.Bytes = ta.Blocks+a.Blocks, ta.Objects+a.Objects, ta.Bytes+a.Bytes
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%s\t%d\t%d\t%s\t\n", tb.Blocks, tb.Objects, Bytes(tb.Bytes), ta.Blocks, ta.Objects, Bytes(ta.Bytes))
	_ = tw.Flush()

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	q := fmt.Sprintf("%s – %s", time.Unix(0, rep.QueryFrom).UTC().Format("15:04"), time.Unix(0, rep.QueryTo).UTC().Format("15:04"))
	fmt.Fprintf(tw, "read amplification, 1-hour query (%s)\t%.1f → %.1f objects per tenant (max %d → %d)\n",
		q, rep.ReadAmpBefore, rep.ReadAmpAfter, rep.MaxReadAmpBefore, rep.MaxReadAmpAfter)
	fmt.Fprintf(tw, "records\t%d ingested, %d in the final blocks\n", rep.Records, rep.Verification.Records)
	fmt.Fprintf(tw, "bytes\t%s ingested, %s in the final blocks, %s written by workers\n",
		Bytes(rep.SegmentBytes), Bytes(tb2(rep.After)), Bytes(int64(rep.Workers.BytesWritten)))
	fmt.Fprintf(tw, "wall time\t%s (ingest %s, then compaction and cleanup drained)\n",
		rep.Wall.Round(10*time.Millisecond), rep.Ingest.Round(10*time.Millisecond))
	s := rep.Scheduler
	fmt.Fprintf(tw, "jobs\t%d created, %d completed, %d reassigned after a lost lease, %d failed, %d released, %d cancelled\n",
		s.Added, s.Completed, s.Reassigned, s.Failed, s.Released, s.Cancelled)
	w := rep.Workers
	fmt.Fprintf(tw, "workers\t%d polls (%d retried), %d jobs run, %d lost their lease, %d tombstones deleted, %d leader redirects\n",
		w.Polls, w.PollRetries, w.JobsStarted, w.JobsLost, w.TombstonesDeleted, rep.Redirects)
	for _, e := range extra {
		fmt.Fprintf(tw, "%s\t%s\n", e[0], e[1])
	}
	_ = tw.Flush()

	fmt.Fprintln(out, "\nverification")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, ck := range rep.Verification.Checks {
		mark := "ok  "
		if !ck.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", mark, ck.Name, ck.Detail)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "  checksum over all records: %016x\n", rep.Verification.Checksum)
}

func tb2(ls []LevelCount) int64 {
	var n int64
	for _, l := range ls {
		n += l.Bytes
	}
	return n
}

// Conclude prints the end of a demo's output: the chart written to chart
// (none if chart is empty or there are fewer than two samples), where the
// run's files were kept (kept, if not empty), and the verdict for err —
// passed when the verification passed, "verification FAILED" when it did
// not, nothing for another error.
func Conclude(out io.Writer, chart, title string, samples []Sample, marks []float64, kept, passed string, err error) {
	if chart != "" && len(samples) > 1 {
		if cerr := WriteChart(chart, title, samples, marks); cerr != nil {
			fmt.Fprintln(out, "chart:", cerr)
		} else {
			fmt.Fprintf(out, "\nchart: %s\n", chart)
		}
	}
	if kept != "" {
		fmt.Fprintln(out, kept)
	}
	switch {
	case errors.Is(err, ErrVerification):
		fmt.Fprintln(out, "\nverification FAILED")
	case err == nil:
		fmt.Fprintln(out, "\n"+passed)
	}
}
