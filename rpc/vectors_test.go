package rpc

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/ident"
)

// vectors returns the rows of the table after the marker
// "<!-- vectors: name -->" in docs/worker-protocol.md, each cell
// unquoted: a Go string literal in backquotes becomes its value.
func vectors(t *testing.T, name string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/worker-protocol.md")
	require.NoError(t, err)
	marker := "<!-- vectors: " + name + " -->\n"
	_, rest, ok := strings.Cut(string(doc), marker)
	require.True(t, ok, "no table %q", name)
	var rows [][]string
	for i, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i < 2 {
			continue // header and rule
		}
		var row []string
		for _, cell := range strings.Split(strings.Trim(line, "|"), "|") {
			cell = strings.TrimSpace(cell)
			if strings.HasPrefix(cell, "`") {
				s, err := strconv.Unquote(strings.Trim(cell, "`"))
				require.NoError(t, err, "cell %s", cell)
				cell = s
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	require.NotEmpty(t, rows, "table %q", name)
	return rows
}

func TestVectorsOutputNaming(t *testing.T) {
	for _, r := range vectors(t, "output") {
		require.Len(t, r, 6)
		tok, err := strconv.ParseUint(r[1], 10, 64)
		require.NoError(t, err)
		n, err := strconv.Atoi(r[2])
		require.NoError(t, err)
		require.NoError(t, ident.ValidateJobName(r[0]))
		require.Equal(t, r[3], ck.AttemptPrefix(r[0], fencing.Token(tok)), "attempt prefix of %v", r)
		require.Equal(t, r[4], ck.OutputID(r[0], fencing.Token(tok), n), "output ID of %v", r)
		require.Equal(t, r[5], ck.ObjectKey(r[4]), "object key of %v", r)
		require.NoError(t, ident.ValidateID(r[4]))
		require.True(t, strings.HasPrefix(r[5], r[3]), "the output lies under its attempt's prefix")
	}
}

func TestVectorsValidation(t *testing.T) {
	for _, c := range []struct {
		table string
		valid func(string) error
	}{
		{"block-id", ident.ValidateID},
		{"job-name", ident.ValidateJobName},
		{"worker-id", func(id string) error { return (&ck.PollRequest{WorkerID: id, Seq: 1}).Validate() }},
	} {
		for _, r := range vectors(t, c.table) {
			require.Len(t, r, 2)
			err := c.valid(r[0])
			switch r[1] {
			case "yes":
				require.NoError(t, err, "%s %q", c.table, r[0])
			case "no":
				require.Error(t, err, "%s %q", c.table, r[0])
			default:
				t.Fatalf("%s %q: valid is %q, want yes or no", c.table, r[0], r[1])
			}
		}
	}
}
