package transport

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var fuzzPaths = []string{PathPoll, PathBlocks, PathOperator, PathStats, PathQuery, PathIndex}

// FuzzHandler sends arbitrary bodies and query strings to every endpoint:
// the handler must answer with a known status and a JSON body, and never
// crash or fail internally.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(0), `{"WorkerID":"w","Seq":1,"FreeSlots":2}`, "")
	f.Add(uint8(0), `{"WorkerID":"w","Seq":1,"Updates":[{"Job":"j","Token":3,"Status":2,"Outputs":[{"ID":"o","Tenant":"t","MinTime":1,"MaxTime":2,"Datasets":[{"Name":"d"}]}]}]}`, "")
	f.Add(uint8(1), `{"blocks":[{"ID":"b1","Tenant":"acme","MinTime":1,"MaxTime":2,"Size":3,"Datasets":[{"Name":"cpu","Size":3,"Records":1,"MinTime":1,"MaxTime":2}]}]}`, "")
	f.Add(uint8(2), `{"Action":3}`, "")
	f.Add(uint8(3), ``, "")
	f.Add(uint8(4), ``, "tenant=acme&from=0&to=10&shard=1")
	f.Add(uint8(5), ``, "after=b0&limit=3")
	b := newFake(f)
	h := NewHandler(b)
	f.Fuzz(func(t *testing.T, sel uint8, body, query string) {
		path := fuzzPaths[int(sel)%len(fuzzPaths)]
		method := http.MethodPost
		if sel%uint8(len(fuzzPaths)) >= 3 {
			method = http.MethodGet
		}
		req := httptest.NewRequest(method, "/", strings.NewReader(body))
		req.URL.Path = path
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusUnprocessableEntity:
		default:
			t.Fatalf("%s %s?%s %q: status %d: %s", method, path, query, body, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", rec.Body)
		}
	})
}
