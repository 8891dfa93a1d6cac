package raftfsm

// OldestVersion is oldestVersion, for the external tests.
const OldestVersion = oldestVersion
