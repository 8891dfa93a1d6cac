"""A compaction worker in Python, speaking the protocol of
docs/worker-protocol.md with grpcio: it polls, follows a not-leader
answer to the leader it names, merges (pretends to) and reports a
completion with its output named as the contract says.

Usage: worker.py GEN_DIR TARGET MIN_TIME MAX_TIME
GEN_DIR holds the stubs generated from the .proto at test time; TARGET is
host:port of any node. Prints one JSON line of what happened.
"""
import json
import sys

import grpc

sys.path.insert(0, sys.argv[1])
from compactkit.v1 import leader_pb2 as pb  # noqa: E402
from compactkit.v1 import leader_pb2_grpc as pb_grpc  # noqa: E402
import status_pb2  # noqa: E402

target = sys.argv[2]
min_time, max_time = int(sys.argv[3]), int(sys.argv[4])
follows = 0


def leader_named(err):
    """The host:port of the leader a NotLeader detail names, or None."""
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        for d in status_pb2.Status.FromString(value).details:
            if d.type_url.endswith("/compactkit.v1.NotLeader"):
                url = pb.NotLeader.FromString(d.value).leader_url
                if url:
                    return url.split("://", 1)[1]
    return None


def poll(req):
    """Sends req until answered: the same request (same seq) each time."""
    global target, follows
    for _ in range(20):
        with grpc.insecure_channel(target) as ch:
            try:
                return pb_grpc.LeaderServiceStub(ch).Poll(req, timeout=10)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                named = leader_named(err)
                if named:
                    target, follows = named, follows + 1
    raise RuntimeError("no leader answered")


worker_id = "py-worker-k2v9q"
resp = poll(pb.PollRequest(worker_id=worker_id, seq=1, free_slots=1))
job = resp.jobs[0]
assert job.outcome == pb.OUTCOME_ASSIGNED, job
plan = job.plan
# Output naming: the n-th output of the attempt is <job>/<token>/<n>,
# stored under the attempt prefix blocks/<job>/<token>/.
output_id = "%s/%d/0" % (job.job, job.token)
output = pb.BlockMeta(
    id=output_id, tenant=plan.tenant, shard=plan.shard, level=plan.level + 1,
    min_time=min_time, max_time=max_time, size=200,
    datasets=[pb.DatasetMeta(name="ds", size=200, records=20, min_time=min_time, max_time=max_time)],
)
done = poll(pb.PollRequest(worker_id=worker_id, seq=2, updates=[pb.StatusUpdate(
    job=job.job, token=job.token, status=pb.REPORT_STATUS_SUCCESS,
    outputs=[output], signature=job.signature,
)]))
print(json.dumps({
    "follows": follows,
    "sources": list(plan.sources),
    "output": output_id,
    "outcome": pb.Outcome.Name(done.jobs[0].outcome),
}))
