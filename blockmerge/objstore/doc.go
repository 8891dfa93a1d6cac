// Package objstore adapts the buckets of github.com/thanos-io/objstore
// (S3, GCS, Azure, Swift, OCI, ...) to blockmerge's [blockmerge.Store], so
// a compaction worker can merge blocks in a real cloud object store.
//
// It lives in a nested module
// (github.com/compactkit/compactkit/blockmerge/objstore) so that the core
// module never depends on cloud SDKs.
//
// The adapter keeps blockmerge's contract on top of the bucket's:
//
//   - Keys are checked with [blockmerge.ValidateKey] before any request.
//   - Absent objects are errors wrapping [blockmerge.ErrNotFound] that name
//     the object (the bucket's IsObjNotFoundErr decides); Delete of an
//     absent object succeeds.
//   - A range that starts at or past the end of the object wraps
//     [blockmerge.ErrInvalidKey], whatever the provider answers.
//   - List returns the keys in lexical order whatever order the provider
//     lists them in: it collects the (recursive) listing of the prefix,
//     sorts it and then calls back, so its memory grows with the number of
//     keys under the prefix.
//   - Put relies on the provider's upload being atomic, as the cloud
//     stores' are (an object appears only when its upload completes). A
//     cancelled put leaves nothing behind, unfinished multipart uploads
//     included: the provider aborts them under a context that outlives the
//     caller's by 30 s (see [WithAbortGrace]).
//   - Readers of unknown size are staged in a temporary file ($TMPDIR)
//     before upload, and the readers the store returns tell their size, so
//     copying between stores never uploads blind.
//   - A range reaching past the largest offset is clamped to the end of
//     the object, as the other stores do.
//
// The adapter does not stream writes itself: blockmerge stages
// merge outputs in a temporary file and hands the file to Put, so the S3
// provider knows the size and uploads in one request (or in parts of the
// configured size) without holding the object in memory.
package objstore
