#!/usr/bin/env python3
"""Golden-output tests of kc's reports, and schema validation of what kc emits.

One small deterministic run (fixed seed; the built-in ref impls and the example
plugin, which has one impl that lies about its accumulator, so the run holds
conforming, violation and not_applicable pairs) is rendered in every report
format, and each output is compared with its expected copy in
tests/golden/expected/. `kc explain` and `kc lint` are compared the same way.
A second run of one contract over every ref impl checks `kc check --format
junit` with and without --junit-not-applicable, and --format json.

What changes from run to run or machine to machine is masked before the
comparison (mask_json, mask_text), never left out of the run:
  - durations ("seconds", JUnit time="..."), timestamps ("time", "created",
    ISO 8601 dates), the host and its profile ("host", "profiles", the memory
    and cgroup notes), the source commit ("kc_commit", kc.commit);
  - hashes that cover any of those (the trace chain's "prev"/"hash", the
    trace anchor, the plan and selection fingerprints, 64-hex digests);
  - paths: this checkout, the build directory and the run's temporary
    directory become <SRC>, <BUILD> and <OUT>;
  - the sample cache's reuse counts (which worker finishes first decides them).
Everything else, the verdicts, evidence numbers, signatures, repro lines and
layout, must match byte for byte.

Every JSON document kc wrote in the run is validated against schemas/: the
report (report.json), the run record (record.json), each trace line (the
grade's and the check's traces), the run state beside a trace (--resume), the
baseline (kc baseline update), kc diff's JSON, the contract graph's JSON, a
signed certificate and its signature file (kc certify), each line of the
ladder's evidence (an honest climb and a failing one with its shrunk
counterexample), and the contract in YAML form (kc fmt --to yaml). The JUnit
file is parsed and its counts checked against its testcases.

The HTML report is compared only where tests/golden/expected/report.html
exists (scripts/update-golden.sh --with-html writes it): its layout is being
reworked, and a golden of a page in flux would only be regenerated, not read.
It is still parsed and checked for external references.

  golden_test.py --kc BIN --src DIR --plugin LIB [--update] [--with-html]
scripts/update-golden.sh regenerates the expected files after an intended change.
"""
import argparse
import difflib
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
import xml.etree.ElementTree as ET

CONTRACTS = ["contracts/blas/KC-RED-01.kc", "contracts/blas/KC-GEMM-01.kc"]
SELECTION = ["--impl", "ref.dot", "--impl", "ref.matmul", "--impl", "example.*",
             "--backend", "ref", "--backend", "plugin", "--seed", "1"]

VOLATILE_KEYS = {"seconds", "time", "created", "host", "kc_commit", "hash", "prev", "last_hash",
                 "fingerprint", "selection", "hash_before"}
MASK = "<masked>"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run(cmd, cwd, expect_rc=None):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    if expect_rc is not None and p.returncode != expect_rc:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect_rc}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def mask_json(v, key=None):
    if key in VOLATILE_KEYS and v not in (None, "", [], {}):
        return MASK
    if key == "profiles":
        return [MASK] if v else v
    if key == "notes" and isinstance(v, list):
        return [MASK if re.search(r"cgroup|memory budget|memory limit", n) else n for n in v]
    if isinstance(v, dict):
        return {k: mask_json(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [mask_json(x) for x in v]
    return v


class Masker:
    def __init__(self, src, build, out):
        # Longest first: the build and out directories may lie under the source tree.
        self.paths = sorted([(os.path.realpath(src), "<SRC>"), (os.path.realpath(build), "<BUILD>"),
                             (os.path.realpath(out), "<OUT>")], key=lambda p: -len(p[0]))

    def text(self, s):
        for path, name in self.paths:
            s = s.replace(path, name)
        s = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<TIME>", s)
        s = re.sub(r"\b[0-9a-f]{64}\b", "<HASH>", s)
        s = re.sub(r"\b[0-9a-f]{40}(-dirty)?\b", "<COMMIT>", s)
        s = re.sub(r'time="[0-9.]+"', 'time="<T>"', s)
        s = re.sub(r'(name="kc\.commit" value=)"[^"]*"', r'\1"<COMMIT>"', s)
        s = re.sub(r"(· host )\S+", r"\1<HOST>", s)
        s = re.sub(r"inputs generated \d+, reused \d+; oracle answers computed \d+, reused \d+",
                   "inputs generated N, reused N; oracle answers computed N, reused N", s)
        return s

    def json_text(self, s):
        return self.text(json.dumps(mask_json(json.loads(s)), indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- schemas

class Schemas:
    def __init__(self, src):
        try:
            import jsonschema  # noqa: F401
        except ImportError:
            sys.exit("golden_test: python3 has no jsonschema module (Debian: python3-jsonschema; "
                     "scripts/install-deps.sh installs it): the schema checks cannot run")
        self.by_name = {}
        d = os.path.join(src, "schemas")
        for f in sorted(os.listdir(d)):
            if f.endswith(".schema.json"):
                with open(os.path.join(d, f)) as fh:
                    self.by_name[f] = json.load(fh)
        self.checked = 0

    def validator(self, name):
        import jsonschema
        schema = self.by_name[name]
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        try:  # jsonschema >= 4.18: cross-file $ref through a registry
            from referencing import Registry, Resource
            registry = Registry().with_resources(
                [(s["$id"], Resource.from_contents(s)) for s in self.by_name.values()])
            return cls(schema, registry=registry)
        except ImportError:  # Debian 12's 4.10
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                store = {s["$id"]: s for s in self.by_name.values()}
                resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
                return cls(schema, resolver=resolver)

    def check(self, instance, name, what):
        errors = sorted(self.validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
        self.checked += 1
        for e in errors[:5]:
            fail(f"{what} does not validate against schemas/{name}: at /{'/'.join(map(str, e.absolute_path))}: "
                 f"{e.message[:300]}")
        return not errors


# ---------------------------------------------------------------- checks

def check_junit(text, what, not_applicable_listed=False):
    root = ET.fromstring(text)
    cases = list(root.iter("testcase"))
    counts = {"tests": len(cases),
              "failures": sum(1 for c in cases if c.find("failure") is not None),
              "errors": sum(1 for c in cases if c.find("error") is not None),
              "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
    for k, n in counts.items():
        if int(root.get(k, -1)) != n:
            fail(f"{what}: <testsuites {k}=\"{root.get(k)}\"> but {n} such testcases")
    for suite in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        for name in ("kc.seed", "kc.version", "kc.commit"):
            if name not in props:
                fail(f"{what}: suite {suite.get('name')} has no property {name}")
        if props.get("kc.seed") != "0x1":
            fail(f"{what}: suite {suite.get('name')}: kc.seed is {props.get('kc.seed')}, the run's seed is 0x1")
    listed = [c for c in cases
              if c.find("skipped") is not None and c.find("skipped").get("message", "").startswith("not_applicable")]
    if listed and not not_applicable_listed:
        fail(f"{what}: lists a not_applicable pair ({listed[0].get('classname')} x {listed[0].get('name')}) by default")
    if not listed and not_applicable_listed:
        fail(f"{what}: --junit-not-applicable, but no not_applicable pair is listed")
    left_out = sum(int(p.get("value")) for p in root.iter("property") if p.get("name") == "kc.not_applicable")
    if not_applicable_listed and left_out:
        fail(f"{what}: --junit-not-applicable, but a suite still counts {left_out} pairs as left out")
    return len(cases), len(listed), left_out


class Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.external = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href") and v and re.match(r"(https?:)?//", v):
                self.external.append(f"<{tag} {k}={v}>")


def check_html(text, what):
    p = Refs()
    p.feed(text)
    if p.external:
        fail(f"{what}: not self-contained: {p.external[:3]}")
    if "4 conforming, 1 violation" not in text:
        fail(f"{what}: no summary line '4 conforming, 1 violation'")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kc", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--update", action="store_true", help="write the expected files instead of comparing")
    ap.add_argument("--with-html", action="store_true", help="(with --update) also write the HTML golden")
    a = ap.parse_args()
    src = os.path.realpath(a.src)
    expected_dir = os.path.join(src, "tests", "golden", "expected")
    kc = os.path.realpath(a.kc)
    plugin = os.path.realpath(a.plugin)
    build = os.path.dirname(os.path.dirname(plugin))  # <build>/lib/libkc_example_plugin.so
    schemas = Schemas(src)
    tmp = tempfile.mkdtemp(prefix="kc-golden.")
    m = Masker(src, build, tmp)
    outputs = {}  # golden name -> masked text
    try:
        sel = SELECTION + ["--plugin", plugin]
        # kc grade: the matrix on stdout, every report format in --out.
        g = run([kc, "grade", *CONTRACTS, *sel, "--out", tmp + "/grade"], src, expect_rc=1)
        outputs["grade.txt"] = m.text(g.stdout)
        gd = tmp + "/grade"
        for f in ("report.json", "record.json", "report.junit.xml", "report.md", "report.html"):
            if not os.path.exists(os.path.join(gd, f)):
                fail(f"kc grade wrote no {f}")
                continue
            with open(os.path.join(gd, f), encoding="utf-8") as fh:
                text = fh.read()
            if f.endswith(".json"):
                doc = json.loads(text)
                schemas.check(doc, "report.schema.json" if f == "report.json" else "record.schema.json", f)
                outputs[f] = m.json_text(text)
            elif f.endswith(".xml"):
                check_junit(text, f)
                outputs[f] = m.text(text)
            elif f.endswith(".html"):
                check_html(text, f)
                if os.path.exists(os.path.join(expected_dir, f)) or (a.update and a.with_html):
                    outputs[f] = m.text(text)
            else:
                outputs[f] = m.text(text)
        # kc check: the table (stdout) and its own trace.
        c = run([kc, "check", *CONTRACTS, *sel, "--no-color", "--trace", tmp + "/check.trace.jsonl"], src,
                expect_rc=1)
        outputs["check.table.txt"] = m.text(c.stdout)
        for trace in (gd + "/trace.jsonl", tmp + "/check.trace.jsonl"):
            with open(trace, encoding="utf-8") as fh:
                lines = [l for l in fh if l.strip()]
            if not lines:
                fail(f"{trace}: empty trace")
            for i, line in enumerate(lines, 1):
                schemas.check(json.loads(line), "trace.schema.json", f"{os.path.basename(trace)}:{i}")
        v = run([kc, "verify-trace", tmp + "/check.trace.jsonl"], src, expect_rc=0)
        outputs["verify-trace.txt"] = m.text(v.stdout)
        # JUnit and JSON straight from kc check: one contract over every ref impl,
        # most of them not_applicable to it (only the reductions run).
        one = [kc, "check", CONTRACTS[0], "--backend", "ref", "--impl", "ref.*", "--seed", "1"]
        j = run(one + ["--format", "junit"], src, expect_rc=0)
        tests, _, left_out = check_junit(j.stdout, "check --format junit")
        # How many ref impls are not_applicable grows with every op added to ref:
        # the count is checked against the listing above, not pinned here.
        outputs["check.junit.xml"] = re.sub(r'(name="kc.not_applicable" value=)"\d+"', r'\1"<N>"', m.text(j.stdout))
        ja = run(one + ["--format", "junit", "--junit-not-applicable"], src, expect_rc=0)
        tests_all, listed, _ = check_junit(ja.stdout, "check --format junit --junit-not-applicable",
                                           not_applicable_listed=True)
        if left_out == 0 or (tests_all, listed) != (tests + left_out, left_out):
            fail(f"check --format junit: {tests} testcases and {left_out} left out by default, but "
                 f"{tests_all} testcases ({listed} not_applicable) with --junit-not-applicable")
        js = run(one + ["--format", "json"], src, expect_rc=0)
        schemas.check(json.loads(js.stdout), "report.schema.json", "check --format json")
        # kc baseline update from the grade's record.
        run([kc, "baseline", "update", "--out", tmp + "/baseline.json", gd], src, expect_rc=0)
        with open(tmp + "/baseline.json", encoding="utf-8") as fh:
            text = fh.read()
        schemas.check(json.loads(text), "baseline.schema.json", "baseline.json")
        # The expiry date is today + 90 days: masked with the other dates.
        outputs["baseline.json"] = re.sub(r"\d{4}-\d\d-\d\d", "<DATE>", m.json_text(text))
        # The run state beside the grade's trace (read by --resume).
        with open(gd + "/trace.jsonl.run.json", encoding="utf-8") as fh:
            schemas.check(json.load(fh), "run-state.schema.json", "trace.jsonl.run.json")
        # kc diff of the grade's record against itself, as JSON.
        d = run([kc, "diff", gd, gd, "--format", "json"], src, expect_rc=0)
        schemas.check(json.loads(d.stdout), "diff.schema.json", "diff --format json")
        # The contract graph, as JSON.
        gr = run([kc, "graph", "--format", "json", *CONTRACTS], src, expect_rc=0)
        schemas.check(json.loads(gr.stdout), "graph.schema.json", "graph --format json")
        # A signed certificate of the grade, and its signature file.
        run([kc, "keygen", "--out", tmp + "/key"], src, expect_rc=0)
        run([kc, "certify", gd, "--sign-key", tmp + "/key", "--out", tmp + "/cert"], src, expect_rc=0)
        for f, name in (("certificate.json", "certificate.schema.json"),
                        ("certificate.json.sig", "signature.schema.json")):
            with open(os.path.join(tmp, "cert", f), encoding="utf-8") as fh:
                schemas.check(json.load(fh), name, f)
        # Ladder evidence: an honest reduction climbs, a bad one fails L3 with a
        # shrunk counterexample (every record kind and the counterexample's form).
        run([kc, "ladder", CONTRACTS[0], "--impl", "ref.dot", "--impl", "calib.sum_bf16_inputs", "--seed", "1",
             "--out", tmp + "/ladder"], src, expect_rc=1)
        with open(tmp + "/ladder/ladder.jsonl", encoding="utf-8") as fh:
            records = [json.loads(l) for l in fh if l.strip()]
        for i, rec in enumerate(records, 1):
            schemas.check(rec, "ladder.schema.json", f"ladder.jsonl:{i}")
        if not any("shrunk" in rec for rec in records):
            fail("ladder.jsonl: no rung with a shrunk counterexample (calib.sum_bf16_inputs should fail L3)")
        # The contract in YAML form against contract.schema.json.
        y = run([kc, "fmt", CONTRACTS[0], "--to", "yaml"], src, expect_rc=0)
        try:
            import yaml
            schemas.check(yaml.safe_load(y.stdout), "contract.schema.json", "kc fmt --to yaml " + CONTRACTS[0])
        except ImportError:
            fail("python3 has no yaml module (Debian: python3-yaml): the contract schema check cannot run")
        outputs["fmt.yaml"] = m.text(y.stdout)
        # explain and lint.
        e = run([kc, "explain", "KC-RED-01"], src, expect_rc=0)
        outputs["explain.txt"] = m.text(e.stdout)
        li = run([kc, "lint", *CONTRACTS], src, expect_rc=0)
        outputs["lint.txt"] = m.text(li.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if a.update:
        os.makedirs(expected_dir, exist_ok=True)
        for name, text in outputs.items():
            with open(os.path.join(expected_dir, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        print(f"golden: wrote {len(outputs)} expected files to {expected_dir}")
    else:
        for name, text in sorted(outputs.items()):
            path = os.path.join(expected_dir, name)
            if not os.path.exists(path):
                fail(f"no expected file {path} (scripts/update-golden.sh writes it)")
                continue
            with open(path, encoding="utf-8") as fh:
                want = fh.read()
            if want != text:
                diff = list(difflib.unified_diff(want.splitlines(), text.splitlines(), "expected/" + name,
                                                 "actual/" + name, lineterm="", n=2))
                fail(f"{name} differs from its golden ({len(diff)} diff lines; scripts/update-golden.sh after an "
                     f"intended change):\n" + "\n".join(diff[:80]))
    print(f"golden: {len(outputs)} outputs {'written' if a.update else 'compared'}, "
          f"{schemas.checked} documents validated against schemas/, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
