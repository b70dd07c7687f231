"""Re-encode through real s3fs against a local S3 server (moto), as a user with a bucket would.

    pip install 'moto[server]' s3fs      # not dependencies of pyprecision or its tests
    python scripts/check_s3.py

Starts moto's S3 server on 127.0.0.1, makes a bucket, uploads tests/data/hf/tiny-bert, then:
re-encodes s3://… → s3://… on one machine and on a Dask LocalCluster (2 worker processes, which
reach the server over TCP), compares every output object with a local re-encode byte for byte,
checks that no temporary object or marker is left, and that a bucket denying PutObject is one
clear error with nothing written. Exit 1 on any failure.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from moto.server import ThreadedMotoServer

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "data" / "hf" / "tiny-bert"


def main() -> int:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.update(AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s", AWS_DEFAULT_REGION="us-east-1",
                      AWS_ENDPOINT_URL=endpoint)
    import s3fs

    from pyprecision.errors import PyPrecisionError
    from pyprecision.reencode import connect, reencode, reencode_distributed

    fs = s3fs.S3FileSystem(endpoint_url=endpoint)
    fs.mkdir("ckpt")
    for p in SRC.iterdir():
        fs.put_file(str(p), f"ckpt/tiny-bert/{p.name}")
    bad: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "local"
        reencode(SRC, local, "bf16")
        want = {p.name: p.read_bytes() for p in local.iterdir()}

        def check(prefix: str) -> None:
            fs.invalidate_cache()
            got = {Path(k).name: fs.cat_file(k) for k in fs.find(prefix, withdirs=False)}
            if got != want:
                bad.append(f"{prefix}: {sorted(set(got) ^ set(want)) or 'bytes differ'}")
            else:
                print(f"{prefix}: {len(got)} objects, byte-identical to the local re-encode")

        s = reencode("s3://ckpt/tiny-bert", "s3://ckpt/one", "bf16")
        print(f"one machine: {len(s.tensors)} tensors, {len(s.copied)} other files copied")
        check("ckpt/one")
        with connect(None, 2, timeout=60) as client:  # worker processes reach the server by TCP
            d = reencode_distributed("s3://ckpt/tiny-bert", "s3://ckpt/dist", "bf16", client=client)
            print(f"dask, 2 worker processes: shards encoded {len(d.encoded)}, resumed {len(d.resumed)}")
            check("ckpt/dist")
        leftovers = [k for k in fs.find("ckpt") if k.endswith(".tmp") or "pyprecision-incomplete" in k]
        if leftovers:
            bad.append(f"left behind: {leftovers}")
        # a bucket this user cannot write: moto honours a deny-all bucket policy
        fs.mkdir("locked")
        import boto3

        boto3.client("s3", endpoint_url=endpoint).put_bucket_policy(Bucket="locked", Policy=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
                           "Resource": "arn:aws:s3:::locked/*"}]}))
        try:
            reencode("s3://ckpt/tiny-bert", "s3://locked/out", "bf16")
            bad.append("a write to a bucket that denies PutObject did not fail")
        except PyPrecisionError as exc:
            print(f"read-only bucket: {exc}")
        fs.invalidate_cache()
        if fs.find("locked"):
            bad.append(f"written into the locked bucket: {fs.find('locked')}")
    server.stop()
    for b in bad:
        print("FAIL", b)
    print("ok" if not bad else f"{len(bad)} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
