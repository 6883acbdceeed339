#!/usr/bin/env python3
"""Measures kc's module boundaries (docs/architecture.md, "Module boundaries").

  scripts/module-boundaries.py includes [-v]    cross-module private includes
  scripts/module-boundaries.py functions [N]    function bodies longer than N lines (150)
  scripts/module-boundaries.py prints           writes to stdout/stderr in library code
  scripts/module-boundaries.py pointers         text that points at documents outside the repository
  scripts/module-boundaries.py check            all four as a gate (ctest ModuleBoundaries):
                                                exit 1 on a private include, a library print,
                                                a long function that is not a flat table or an
                                                outside pointer

Run from the repository root. Modules are the static libraries CMakeLists.txt
builds: kc_core (src/core, src/measure), kc_lang, kc_ops, kc_backends
(backends, calibration), kc_verify, kc_engine (src/engine, src/isolate,
src/report), kc_ladder, and the CLI (tools/kc). A private include is an
#include "X" of one module's file that resolves to a header of another module
outside include/kc. Function lengths come from brace counting on text with
comments and strings blanked: namespace, class and extern blocks are
transparent, a lambda counts within its enclosing function.
"""
import collections
import os
import re
import sys

MODULES = [('src/core', 'core'), ('src/measure', 'core'), ('src/lang', 'lang'), ('src/ops', 'ops'),
           ('backends', 'backends'), ('calibration', 'backends'), ('src/verify', 'verify'),
           ('src/engine', 'engine'), ('src/isolate', 'engine'), ('src/report', 'engine'),
           ('src/ladder', 'ladder'), ('tools/kc', 'cli')]
SOURCES = ('.cpp', '.cc', '.c', '.h', '.cu')


def module_of(rel):
    for prefix, m in MODULES:
        if rel == prefix or rel.startswith(prefix + '/'):
            return m
    return None


def files(prefixes):
    for prefix in prefixes:
        for d, _, fs in os.walk(prefix):
            for f in sorted(fs):
                if f.endswith(SOURCES):
                    yield os.path.join(d, f)


# Flat tables, exempt from the length limit: flag and clause parsers' keyword
# chains, an impl table, embedded kernel source. Each is one long list of
# independent entries; splitting it would scatter the list, not name steps.
FLAT_TABLES = {
    ('src/lang/clauses.cpp', 'parse_predicate'),
    ('src/lang/clauses.cpp', 'parse_post'),
    ('src/lang/clauses.cpp', 'parse_measure'),
    ('src/lang/parse_kc.cpp', 'block'),
    ('tools/kc/main.cpp', 'parse_args'),
    ('backends/cuda/cuda_backend.cc', 'make_impls'),
    ('backends/opencl/kernels.cc', 'common_source'),
}
# Programs of their own (not the library): they talk to their parent or the
# user on stdout/stderr by design.
OWN_PROGRAMS = ('backends/mpi/kc_mpi_worker.cc', 'backends/python/kc_python_plugin.c')


def private_includes(verbose):
    pairs = collections.Counter()
    hits = collections.defaultdict(list)
    for path in files(p for p, _ in MODULES):
        m = module_of(path)
        for n, line in enumerate(open(path, errors='replace'), 1):
            mm = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not mm or mm.group(1).startswith('kc/'):
                continue
            # How the build finds it: -I src, -I . and -I backends.
            target = next((c for c in (os.path.join('src', mm.group(1)), mm.group(1),
                                       os.path.join('backends', mm.group(1))) if os.path.exists(c)), None)
            tm = module_of(target) if target else None
            if tm and tm != m:
                pairs[(m, tm)] += 1
                hits[(m, tm)].append(f'{path}:{n} -> {target}')
    for (a, b), c in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f'{c:4d}  {a} -> {b} (private)')
        if verbose:
            for h in hits[(a, b)]:
                print('        ' + h)
    print(f'{sum(pairs.values())} cross-module private includes')
    return sum(pairs.values())


def blank(text):
    """text with comments, string and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith('R"', i) and re.match(r'R"([^(\s]*)\(', text[i:]):
            delim = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            j = text.find(')' + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r'[^\n]', ' ', text[i:j]))
        i = j
    return ''.join(out)


def function_lengths(path):
    text = blank(open(path, errors='replace').read())
    stack, last, found = [], 0, []
    for m in re.finditer(r'[{};]', text):
        pos = m.start()
        if m.group() == '{':
            head = ' '.join(text[last:pos].split())
            if any(kind == 'func' for kind, _, _ in stack):
                kind = 'block'
            elif re.match(r'^(namespace|extern)\b', head) or re.search(r'\bnamespace\b', head):
                kind = 'scope'
            elif re.search(r'\b(class|struct|union|enum)\b[^()]*$', head):
                kind = 'scope'
            elif ')' in head and not head.endswith('=') and not head.endswith(']'):
                kind = 'func'
            else:
                kind = 'block'
            name = ''
            if kind == 'func':
                nm = re.search(r'([~\w:<>]+)\s*\(', head)
                name = nm.group(1) if nm else head[:60]
            stack.append((kind, pos, name))
        elif m.group() == '}' and stack:
            kind, start, name = stack.pop()
            if kind == 'func':
                first = text.count('\n', 0, start) + 1
                found.append((text.count('\n', 0, pos) + 2 - first, first, name))
        last = pos + 1
    return found


def long_functions(limit, gate=False):
    rows = [(n, path, first, name) for path in files(['src', 'backends', 'calibration', 'tools'])
            for n, first, name in function_lengths(path) if n > limit]
    if gate:
        rows = [r for r in rows if (r[1], r[3].split('::')[-1]) not in FLAT_TABLES]
    for n, path, first, name in sorted(rows, reverse=True):
        print(f'{n:5d}  {path}:{first}  {name}')
    print(f'{len(rows)} functions over {limit} lines' + (' (flat tables aside)' if gate else ''))
    return len(rows)


def prints():
    pattern = re.compile(r'std::cerr|std::cout|std::clog|fprintf\(\s*std(err|out)|(?<![sn])printf\(|\bputs\(|perror\(')
    count = 0
    for path in files(['src', 'backends', 'calibration']):
        if path in OWN_PROGRAMS:
            continue
        raw = open(path, errors='replace').read()
        for n, (line, original) in enumerate(zip(blank(raw).splitlines(), raw.splitlines()), 1):
            # A process's last words before abort() may go to stderr: marked in the source.
            if pattern.search(line) and 'last words before abort' not in original:
                print(f'{path}:{n}: {line.strip()}')
                count += 1
    print(f'{count} writes to stdout/stderr in library code')
    return count


def outside_pointers():
    """The repository stands on its own: code, contracts, docs and scripts
    cite docs/ and upstream sources, never the design notes kc grew from."""
    pattern = re.compile('DESIGN' + r'\.md|STYLE' + r'\.md|\.\./' + 'shared/')
    count = 0
    for top in ('src', 'include', 'backends', 'calibration', 'tools', 'python', 'bindings', 'contracts', 'docs',
                'tests', 'scripts', 'bench', 'examples', 'cmake', 'deploy', 'schemas', '.ci', 'README.md',
                'CMakeLists.txt', 'CMakePresets.json'):
        paths = [top] if os.path.isfile(top) else (os.path.join(d, f) for d, _, fs in os.walk(top) for f in sorted(fs))
        for path in paths:
            try:
                text = open(path, encoding='utf-8').read()
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if pattern.search(line):
                    print(f'{path}:{n}: {line.strip()[:100]}')
                    count += 1
    print(f'{count} pointers to documents outside the repository')
    return count


if __name__ == '__main__':
    what = sys.argv[1] if len(sys.argv) > 1 else 'includes'
    if what == 'includes':
        private_includes('-v' in sys.argv)
    elif what == 'functions':
        long_functions(int(sys.argv[2]) if len(sys.argv) > 2 else 150)
    elif what == 'prints':
        prints()
    elif what == 'pointers':
        outside_pointers()
    elif what == 'check':
        bad = private_includes(True) + long_functions(150, gate=True) + prints() + outside_pointers()
        sys.exit(1 if bad else 0)
    else:
        sys.exit(__doc__)
