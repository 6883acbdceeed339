#!/usr/bin/env python3
"""The HTML report in a real browser (Debian's chromium, headless).

A small real run (kc grade: one calibration impl and Eigen's -Ofast and
no-vector builds on C-ORD-03 and C-PRC-03, about 2 s) writes report.html.
Chromium then
  - takes a screenshot at 1280 and at 420 pixels wide (kept in --out for a
    person to look at; each must be a PNG of that width that is not blank);
  - dumps the DOM after the page's script ran, for URLs that set the filter
    (#backend=B&verdict=violation, #q=IMPL): exactly the violations report.json
    gives that backend (or impl) are visible, each row links to its evidence,
    and the count in the heading says "N of M";
  - opens the report of a kernel whose names carry markup (kc vet of a small C
    file): no element, attribute or script of theirs reaches the DOM.
Exit 77 (ctest: skipped) when no chromium is installed.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from html.parser import HTMLParser

SKIP = 77


def find_chromium():
    env = os.environ.get("KC_CHROMIUM")
    if env:
        return env if shutil.which(env) else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Dom(HTMLParser):
    """The elements of a dumped DOM as (tag, attrs, text) with their ancestors' ids."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.elements = []  # dicts: tag, attrs, ids (ancestor ids), text

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        ids = (self.stack[-1]["ids"] if self.stack else ()) + ((a["id"],) if "id" in a else ())
        el = {"tag": tag, "attrs": a, "ids": ids, "text": ""}
        self.elements.append(el)
        if tag not in ("meta", "input", "br", "img", "link", "circle", "line", "polyline"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data


def classes(el):
    return el["attrs"].get("class", "").split()


class Browser:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.profile = os.path.join(workdir, "profile")

    def run(self, args, timeout=60):
        cmd = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--disable-extensions", "--user-data-dir=" + self.profile] + args
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if p.returncode != 0:
            raise AssertionError("chromium failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode()[-2000:]))
        return p.stdout.decode("utf-8", "replace")

    def dom(self, url):
        text = self.run(["--virtual-time-budget=5000", "--dump-dom", url])
        d = Dom()
        d.feed(text)
        return d, text

    def screenshot(self, url, path, width, height=900):
        self.run(["--screenshot=" + path, "--window-size=%d,%d" % (width, height), "--force-device-scale-factor=1",
                  "--virtual-time-budget=5000", url])


def png_size_and_colours(path):
    """Width, height and whether the image holds more than one colour (not blank)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path + ": not a PNG"
    width, height, depth, ctype = struct.unpack(">IIBB", data[16:26])
    idat, pos = b"", 8
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    # Distinct bytes over the filtered scanlines: a blank page has (almost) one.
    return width, height, len(set(raw[: min(len(raw), 4_000_000)])) > 8


failures = []


def check(cond, message):
    if not cond:
        failures.append(message)
        print("FAIL: " + message)


def visible_rows(dom, tbody_id):
    rows = [e for e in dom.elements if e["tag"] == "tr" and tbody_id in e["ids"] and "f" in classes(e)]
    return rows, [r for r in rows if "off" not in classes(r)]


# A kernel whose impl name and description carry markup (kernels are
# untrusted): kc vet grades it, and in the browser its report must hold no
# element, attribute or script the names brought, and still run its own.
EVIL_KERNEL = r"""
#include <stdint.h>
#include <string.h>
#include "kc/kc_plugin.h"

static int32_t relu_plus_one(const kc_call* c, char* msg, size_t size, void* user) {
  (void)user; (void)msg; (void)size;
  const kc_tensor *x = 0, *y = 0;
  for (int32_t i = 0; i < c->num_tensors; ++i) {
    if (strcmp(c->tensors[i].name, "x") == 0) x = &c->tensors[i];
    if (strcmp(c->tensors[i].name, "y") == 0) y = &c->tensors[i];
  }
  if (!x || !y || x->dtype != KC_DTYPE_F32) return KC_UNSUPPORTED;
  const float* px = (const float*)x->data;
  float* py = (float*)y->data;
  for (int64_t i = 0; i < x->shape[0]; ++i) py[i * y->strides[0]] = px[i * x->strides[0]] + 1.0f;
  return KC_OK;
}

static const kc_impl_desc kImpls[] = {
    {"evil.<img src=x onerror=document.title='pwned'>", "relu", "FP32",
     "determinism = BITWISE, nan = IEEE_PROPAGATE", "<script>document.title='pwned'</script>", relu_plus_one, NULL},
};
static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "evil\"><svg onload=alert(1)>", "0.1", 1, kImpls};
__attribute__((visibility("default"))) const kc_plugin* kc_plugin_init(uint32_t v) {
  return v >= KC_PLUGIN_ABI_VERSION ? &kPlugin : NULL;
}
"""
EVIL_IMPL = "evil.<img src=x onerror=document.title='pwned'>"


def hostile_names(args, browser, work):
    kernel = os.path.join(work, "evil.c")
    with open(kernel, "w") as f:
        f.write(EVIL_KERNEL)
    out_dir = os.path.join(args.out, "hostile")
    shutil.rmtree(out_dir, ignore_errors=True)
    classes_dir = os.path.join(args.source, "contracts", "classes")
    p = subprocess.run([args.kc, "vet", kernel, os.path.join(classes_dir, "C-PRC-03.kc"),
                        os.path.join(classes_dir, "C-EXC-01.kc"), "--out", out_dir, "--no-color"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    if p.returncode != 1:
        check(False, "kc vet of the hostile kernel exited %d, expected 1:\n%s" % (p.returncode, p.stdout.decode()[-3000:]))
        return
    url = "file://" + os.path.abspath(os.path.join(out_dir, "report.html")) + "#verdict=violation"
    dom, text = browser.dom(url)
    tags = [e["tag"] for e in dom.elements]
    check(tags.count("script") == 1, "hostile names: one script element (%d)" % tags.count("script"))
    check("img" not in tags, "hostile names: no img element")
    handlers = [(e["tag"], k) for e in dom.elements for k in e["attrs"] if k.startswith("on")]
    check(not handlers, "hostile names: no event-handler attribute: %s" % handlers[:3])
    title = [e["text"] for e in dom.elements if e["tag"] == "title"]
    check(title == ["kc conformance report"], "hostile names: the title is kc's: %r" % title)
    body = [e for e in dom.elements if e["tag"] == "body"][0]
    check(body["attrs"].get("data-filter") == "verdict=violation", "hostile names: the page's own script ran")
    rows, shown = visible_rows(dom, "violation-rows")
    cells = [e["text"] for e in dom.elements if e["tag"] == "td" and "violation-rows" in e["ids"]]
    check(len(shown) >= 1 and EVIL_IMPL in cells, "hostile names: the impl name is shown as text in the violations")
    print("hostile names: %d violation rows, names shown as text, one script" % len(shown))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kc", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--out", required=True, help="directory for the run and the screenshots")
    args = ap.parse_args()

    chromium = find_chromium()
    if chromium is None:
        print("skipped: no chromium (scripts/install-deps.sh installs Debian's chromium; KC_CHROMIUM names another)")
        return SKIP

    os.makedirs(args.out, exist_ok=True)
    run_dir = os.path.join(args.out, "run")
    shutil.rmtree(run_dir, ignore_errors=True)
    classes_dir = os.path.join(args.source, "contracts", "classes")
    grade = [args.kc, "grade", os.path.join(classes_dir, "C-PRC-03.kc"), os.path.join(classes_dir, "C-ORD-03.kc"),
             "--impl", "calib.allreduce_fp*", "--impl", "eigen.avx2_Ofast.*", "--impl", "eigen.novec.*",
             "--backend", "calibration", "--backend", "eigen", "--out", run_dir, "--no-color"]
    p = subprocess.run(grade, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode != 1:
        print(out)
        print("FAIL: kc grade exited %d, expected 1 (violations)" % p.returncode)
        return 1
    report = json.load(open(os.path.join(run_dir, "report.json")))
    violations = [c for c in report["cases"] if c["verdict"] in ("violation", "error")]
    per_backend = {}
    for c in violations:
        per_backend.setdefault(c["backend"], []).append(c)
    check(len(per_backend) >= 2, "the run has violations in two backends: %s" % sorted(per_backend))

    html_path = os.path.abspath(os.path.join(run_dir, "report.html"))
    url = "file://" + html_path
    with tempfile.TemporaryDirectory() as work:
        browser = Browser(chromium, work)

        for width in (1280, 420):
            shot = os.path.join(args.out, "report-%d.png" % width)
            if os.path.exists(shot):
                os.remove(shot)
            browser.screenshot(url, shot, width)
            check(os.path.exists(shot), "screenshot %s written" % shot)
            if os.path.exists(shot):
                w, h, drawn = png_size_and_colours(shot)
                check(w == width and h == 900, "%s is %dx%d, expected %dx900" % (shot, w, h, width))
                check(drawn, "%s is not blank" % shot)
                print("screenshot: %s (%dx%d)" % (shot, w, h))

        # Unfiltered: every violation and error is a visible row; the page's
        # only script is kc's; each row links to evidence that exists.
        dom, text = browser.dom(url)
        rows, shown = visible_rows(dom, "violation-rows")
        check(len(rows) == len(violations) and len(shown) == len(rows),
              "unfiltered: %d rows, %d visible, report.json has %d" % (len(rows), len(shown), len(violations)))
        check(text.count("<script") == 1, "one script element")
        ids = {e["attrs"]["id"] for e in dom.elements if "id" in e["attrs"]}
        anchors = [e["attrs"]["href"][1:] for e in dom.elements
                   if e["tag"] == "a" and "violation-rows" in e["ids"] and e["attrs"].get("href", "").startswith("#case-")]
        check(len(anchors) == len(violations), "each row links to its evidence (%d links)" % len(anchors))
        check(all(a in ids for a in anchors), "every evidence link has its target")
        ops = [e for e in dom.elements if e["tag"] == "details" and "op" in classes(e)]
        check(len(ops) >= 2, "a matrix per op (%d)" % len(ops))
        plots = [e for e in dom.elements if e["tag"] == "svg" and "plots" in e["ids"]]
        check(len(plots) >= 1, "bound-ratio plots (%d)" % len(plots))

        # One link per backend: exactly its violations remain.
        for backend, cases in sorted(per_backend.items()):
            state = "backend=%s&verdict=violation" % backend
            dom, _ = browser.dom(url + "#" + state)
            body = [e for e in dom.elements if e["tag"] == "body"][0]
            check(body["attrs"].get("data-filter") == state,
                  "the script read the filter from the URL: %r" % body["attrs"].get("data-filter"))
            rows, shown = visible_rows(dom, "violation-rows")
            want = [c for c in cases if c["verdict"] == "violation"]
            check(len(shown) == len(want), "#%s: %d rows visible, report.json has %d" % (state, len(shown), len(want)))
            check(all(r["attrs"].get("data-b") == backend for r in shown), "#%s: only %s rows visible" % (state, backend))
            count = [e for e in dom.elements if e["attrs"].get("data-count") == "violation-rows"]
            check(count and count[0]["text"].strip() == "%d of %d" % (len(want), len(rows)),
                  "#%s: heading count %r" % (state, count[0]["text"] if count else None))
            points = [e for e in dom.elements if e["tag"] == "circle" and "f" in classes(e)]
            check(all("off" in classes(pt) or pt["attrs"].get("data-b") == backend for pt in points),
                  "#%s: only %s points in the plots" % (state, backend))
            print("#%s: %d of %d violations visible" % (state, len(shown), len(rows)))

        # The search box, from the URL: one impl's name.
        impl = violations[0]["impl"]
        dom, _ = browser.dom(url + "#q=" + impl)
        rows, shown = visible_rows(dom, "violation-rows")
        want = [c for c in violations if impl.lower() in (c["impl"] + " " + c["contract"]).lower()]
        check(len(shown) == len(want), "#q=%s: %d rows visible, expected %d" % (impl, len(shown), len(want)))

        hostile_names(args, browser, work)

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("browser checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
