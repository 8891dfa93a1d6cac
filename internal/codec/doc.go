// Package codec is the deterministic binary encoding shared by every
// compactkit package: commands, poll messages and snapshots.
//
// Values are encoded as CBOR in the Core Deterministic mode of RFC 8949
// (github.com/fxamacker/cbor/v2), so equal values always encode to identical
// bytes and replicas can compare snapshots byte for byte. Structs are encoded
// in array form (the "toarray" tag), which is both smaller and faster to
// decode than maps.
//
// Four layers sit on top of the CBOR mode:
//
//   - A four-byte header (magic, kind, version) in front of every standalone
//     message, so an unknown kind or version is an error rather than a
//     misinterpretation. See [AppendHeader] and [ParseHeader].
//   - A framed stream with a trailing CRC-32C for snapshots: a header followed
//     by length-prefixed CBOR frames of bounded size and a checksum, written and
//     read with bounded buffers. See [Writer] and [Reader].
//   - Column helpers that pack large collections (IDs, times, sizes) into a few
//     byte strings, which decode an order of magnitude faster than one struct
//     per record. See [PackStrings] and [PackInts].
//   - A decoder for snapshot sections that reads runs of frames holding a
//     counted number of records and unpacks their columns, remembering the
//     first error in the manner of bufio.Scanner, so that a restorer checks
//     one error per frame rather than one per column. See [Decoder].
//
// A message that gained fields after the first release is written in one
// of two forms, chosen by the codec that encodes the enclosing value: the
// full form (every field; the form of [Default] and [Snapshot]) and the
// compact form of the first release's versions (optional trailing fields
// only when set; [Codec.Compact]). Nested messages never choose.
//
// Decoding is hardened against hostile input: array, map and nesting limits
// are explicit ([Limits]), frames have a maximum size, and every failure
// returns an error wrapping one of the sentinel errors of this package rather
// than panicking. Restorers report input that decodes but is not valid with
// [Malformed].
package codec
