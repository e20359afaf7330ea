"""Write a realistic mixed corpus for `refusals scan`, and print its ground-truth counts.

    python bench/gen_scan_corpus.py DIR [--records N] [--seed S]
    python bench/gen_scan_corpus.py FILE.jsonl --bytes 100000000   one large plain file

The corpus is built from the recorded payloads `refusals.scan.corpus` ships (copies of
tests/fixtures), so it works from an installed package too; `refusals scan --demo-corpus
DIR` writes the same directory corpus.
"""

from __future__ import annotations

import argparse

import orjson

from refusals.scan.corpus import generate, write_bench_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="a directory (every layout) or, with --bytes, a file")
    parser.add_argument("--records", type=int, default=1000, help="records per large file")
    parser.add_argument("--bytes", type=int, help="write one plain JSONL file of this size")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.bytes:
        truth = write_bench_file(args.target, args.bytes, seed=args.seed)
    else:
        truth = generate(args.target, records=args.records, seed=args.seed)
    print(
        orjson.dumps(
            {
                "records": truth.records,
                "bad_records": truth.bad_records,
                "by_finish": truth.by_finish(),
                "resubmit": truth.resubmit,
                "files": len(truth.files),
            },
            option=orjson.OPT_INDENT_2,
        ).decode()
    )


if __name__ == "__main__":
    main()
