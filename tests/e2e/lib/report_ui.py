# tests/e2e/lib/report_ui.py - dcpireport's page used as a person uses it, in headless Chromium driven through
# the DevTools protocol (lib/cdp.py: mouse clicks where the elements are drawn, keys typed into
# the inputs), with what it shows compared to other tools' output. Called by report_ui.sh and
# report_browser.sh (which make the pages and the reference files); one mode per page kind:
#
#   report_ui.py synth PAGE PAGE_NOSRC DCPIPROF_CSV PEEK_TXT ASM_LIST PROC
#       PAGE: a generated profile with a stack profile (bench/gen_bigprof), its source readable;
#       PAGE_NOSRC: the same with the source file gone. Checks: sorting the procedure table by a
#       click on each kind of header (counts, children, names; a second click reverses), against
#       dcpiprof -csl's rows, and PROC's instructions by samples and by address (dcpilist -asm); the caller/callee view of several procedures (found by typing in
#       its search box, or by the link in their procedure row) against `go tool pprof -peek`
#       (PEEK_TXT), and expanding a caller or a callee (its rows = pprof's callers or callees of
#       it), collapsing it again; PROC's listing with its source table in PAGE, and in
#       PAGE_NOSRC without any source row but with every instruction of `dcpilist -asm`
#       (ASM_LIST) and a note that says why; no horizontal scrolling at 1000 and 760 px.
#   report_ui.py fold PAGE ASM_LIST PROC
#       PAGE: a generated profile whose PROC is long (hundreds of instructions) with samples on a
#       few. Checks: PROC's instruction table draws the instructions with samples and a few
#       around each, in order, with rows that count the ones left out (summing to dcpilist -asm's
#       ASM_LIST); its button shows all of them (dcpilist -asm's list, the page taller) and folds
#       them again.
#   report_ui.py live PAGE PROCS_CSV PROF_CSV LONGNAME PEEK_TXT TRACES_TXT
#       PAGE: a dcpid -g run of several programs. Checks: the processes table has dcpiprof
#       -procs -csl's rows (pid, command, count); sorting it by pid and by command; the caller/
#       callee view of the hottest procedure says its samples in chains as dcpiprof's children
#       column; the views of rec (calls itself), even and odd (call each other) against `go
#       tool pprof -peek` (PEEK_TXT), and a procedure calling itself against the chains of
#       `go tool pprof -traces` (TRACES_TXT; -peek leaves such calls out); expanding a caller
#       and a callee there; the row of LONGNAME (a long C++ name) drawn; no horizontal scrolling
#       at 1000 px and 760 px; no debug text on the page.
#   report_ui.py browser PROBE SHOT PAGE PROCS_CSV PROF_CSV LONGNAME PEEK_TXT TRACES_TXT [DUMP ...]
#       report_browser.sh's one Chromium for all its pages (each start costs about a CPU second):
#       PROBE, a page whose script writes "ran" into #x, must show it (else "SKIP: ..." and exit
#       77: chromium cannot run here); PAGE and each DUMP page's DOM, serialized as chromium
#       --dump-dom does, into the page's name with .dom for .html; the live checks on PAGE; a
#       1400x6000 screenshot of PAGE (scrollbars hidden) into SHOT.
#
# Prints one line per check; "FAIL: ..." lines and exit 1 when one fails.
import base64
import csv
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CdpError  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    if ok:
        print('ok: ' + what)
    else:
        fails += 1
        print('FAIL: ' + what)


def rows(b, sel, attrs=('name', 'count')):
    return b.eval('[...document.querySelectorAll(%r)].map(r => [%s])' %
                  (sel, ','.join('r.dataset.%s' % a for a in attrs)))


def header(b, table, title, nth=0):
    """The index of the nth header cell of table titled title."""
    titles = b.eval('[...document.querySelectorAll(%r)].map(t => t.textContent)' %
                    (table + ' th'))
    idx = [i for i, t in enumerate(titles) if t == title]
    if len(idx) <= nth:
        raise CdpError('%s: no header %r in %s' % (table, title, titles))
    return idx[nth]


def common_checks(b, what):
    check(b.eval('document.getElementById("errors").hidden && '
                 '!document.getElementById("errors").textContent'), what + ': no errors')
    text = b.eval('document.body.innerText')
    check(not re.search(r'\b(rendered|not rendered|status)\b', text),
          what + ': no debug text ("rendered", "status") on the page')
    for w in (1000, 760):
        b.call('Emulation.setDeviceMetricsOverride',
               {'width': w, 'height': 900, 'deviceScaleFactor': 1, 'mobile': False})
        sw, cw = b.eval('[document.documentElement.scrollWidth, '
                        'document.documentElement.clientWidth]')
        check(sw <= cw, '%s: no horizontal scrolling at %d px (scrollWidth %d, clientWidth %d)' %
              (what, w, sw, cw))
    b.call('Emulation.setDeviceMetricsOverride',
           {'width': 1200, 'height': 900, 'deviceScaleFactor': 1, 'mobile': False})


# ---- synth ----

def parse_peek(path):
    """go tool pprof -peek's blocks: name -> (flat, cum, {caller: n}, {callee: n})."""
    out, block = {}, []
    for line in open(path):
        if line.startswith('---'):
            if block:
                node = [i for i, l in enumerate(block) if not l[0]]
                if node:
                    i = node[0]
                    _, name, flat, cum = block[i]
                    out[name] = (flat, cum, {n: c for _, n, c in block[:i]},
                                 {n: c for _, n, c in block[i + 1:]})
            block = []
            continue
        m = re.match(r'^ {20,}(\d+)\s+\S+%\s+\|   (\S.*)$', line)
        if m:
            block.append((1, m.group(2).strip(), int(m.group(1))))
            continue
        m = re.match(r'^\s+(\d+)\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+\| (\S.*)$', line)
        if m:
            block.append((0, m.group(3).strip(), int(m.group(1)), int(m.group(2))))
    return out


def call_rows(b, table):
    return b.eval('[...document.querySelectorAll("#%s tr.crow")].map(r => '
                  '[r.dataset.name, +r.dataset.count, +r.dataset.depth])' % table)


def parse_traces(path):
    """go tool pprof -traces: for each procedure, the samples of the chains in which it calls
    itself directly (counted once per chain), which pprof -peek leaves out."""
    out, chain, count = {}, [], 0

    def done():
        for n in {a for a, b in zip(chain, chain[1:]) if a == b}:
            out[n] = out.get(n, 0) + count
    for line in open(path):
        if line.startswith('-'):
            done()
            chain, count = [], 0
            continue
        m = re.match(r'^\s+(\d+)   (\S.*)$', line)
        if m and not chain:
            count, chain = int(m.group(1)), [m.group(2).strip()]
        elif chain and line.strip():
            chain.append(line.strip())
    done()
    return out


def without(d, name):
    return {n: c for n, c in d.items() if n != name}


def check_view(b, name, peek, how, recursive=None):
    """The view of name against pprof -peek; a call of name by itself (not in -peek) must be
    recursive[name] samples (0: none)."""
    rec = (recursive or {}).get(name, 0)
    flat, cum, callers, callees = peek[name]
    shown = b.eval('document.getElementById("callview").dataset.name')
    check(shown == name, '%s: the view shows %s (%s)' % (how, name, shown))
    for table, want in (('callers', callers), ('callees', callees)):
        got = call_rows(b, table)
        have = {n: c for n, c, d in got if n}
        check(without(have, name) == want and len(have) == len([1 for n, c, d in got if n]),
              '%s %s %s (pprof -peek %s)' % (name, table, sorted(have.items()), sorted(want.items())))
        check(have.get(name, 0) == rec, '%s %s itself: %d (chains of pprof -traces with %s calling '
              'itself: %d)' % (name, table, have.get(name, 0), name, rec))
    got = call_rows(b, 'callees')
    selfrow = [c for n, c, d in got if not n]
    check(selfrow == ([flat] if flat else []), '%s self row %s (pprof flat %d)' % (name, selfrow, flat))
    total = b.eval('document.querySelector("#callview p.note").textContent')
    check(total.startswith('%d samples in chains through it' % cum),
          '%s: "%s" (pprof cum %d)' % (name, total, cum))


def expand(b, table, name, peek, kind, recursive=None):
    sel = '#%s tr.crow[data-depth="0"][data-name="%s"] button.expand' % (table, name)
    b.click(sel)
    got = call_rows(b, table)
    i = [k for k, r in enumerate(got) if r[0] == name and r[2] == 0][0]
    kids = []
    for r in got[i + 1:]:
        if r[2] == 0:
            break
        kids.append(r)
    flat, cum, callers, callees = peek[name]
    want = callers if kind == 'caller' else callees
    have = {n: c for n, c, d in kids if n and d == 1}
    rec = (recursive or {}).get(name, 0)
    check(without(have, name) == want and have.get(name, 0) == rec and all(d == 1 for _, _, d in kids),
          'expanded %s %s: %s (pprof -peek: %s, itself %d)' % (kind, name, kids, want, rec))
    b.click(sel)
    check(len(call_rows(b, table)) == len(got) - len(kids), 'collapsed %s %s again' % (kind, name))


def synth(page, page_nosrc, prof_csv, peek_txt, asm_list, proc):
    prof = {r['procedure']: r for r in csv.DictReader(open(prof_csv))}
    peek = parse_peek(peek_txt)
    tmp = tempfile.mkdtemp(prefix='dcpi-ui-')
    b = Browser(os.path.join(tmp, 'chrome'), 1200, 900)
    try:
        check(b.open('file://' + page) == 'rendered', 'page drawn')
        common_checks(b, 'synth page')

        # sort the procedure table by clicking its headers
        n0 = len(rows(b, 'tr.prow'))
        check(n0 == len(prof), 'procedure rows: %d (dcpiprof %d)' % (n0, len(prof)))
        for title, key, nth in (('cpu-clock', 'cpu-clock', 0), ('children', 'children', 0)):
            col = header(b, '#procs', title, nth)
            b.click('#procs th', col)
            got = rows(b, 'tr.prow')
            vals = [int(prof[n][key]) for n, _ in got]
            check(len(got) == n0 and vals == sorted(vals, reverse=True) and vals[0] > vals[-1],
                  'sorted by %s, largest first: %s' % (title, vals[:8]))
            b.click('#procs th', col)
            got = rows(b, 'tr.prow')
            vals = [int(prof[n][key]) for n, _ in got]
            check(vals == sorted(vals), 'click again: by %s, smallest first: %s' % (title, vals[:8]))
            check(b.eval('document.querySelectorAll("#procs th")[%d].className' % col) == 'n sort asc',
                  'the %s header shows the order' % title)
        col = header(b, '#procs', 'procedure')
        b.click('#procs th', col)
        names = [n for n, _ in rows(b, 'tr.prow')]
        check(names == sorted(prof), 'sorted by procedure name: %s' % names[:6])
        b.click('#procs th', col)
        names = [n for n, _ in rows(b, 'tr.prow')]
        check(names == sorted(prof, reverse=True), 'click again: names reversed: %s' % names[:6])
        col = header(b, '#procs', 'cpu-clock')
        b.press('#procs th', 'Enter', col)
        vals = [int(prof[n]['cpu-clock']) for n, _ in rows(b, 'tr.prow')]
        check(vals == sorted(vals, reverse=True) and b.eval(
              'document.querySelectorAll("#procs th")[%d].getAttribute("aria-sort")' % col) ==
              'descending', 'Enter on the focused cpu-clock header sorts by it: %s' % vals[:6])

        # the caller/callee view: typed search, then a pick; the link in a procedure row
        b.type('#callsearch', 'f3')
        b.click('#calls a.callpick[data-name="f3"]')
        check_view(b, 'f3', peek, 'search "f3", pick f3')
        expand(b, 'callers', 'f1', peek, 'caller')
        expand(b, 'callees', 'f6', peek, 'callee')
        b.type('#procfilter', 'f6')
        b.click('tr.prow[data-name="f6"] a.tocalls')
        check_view(b, 'f6', peek, 'the calls link of f6\'s procedure row')
        check(b.eval('document.getElementById("callview").getBoundingClientRect().top < innerHeight'),
              'the link scrolled the view into sight')

        # PROC's listing with its source
        check(b.eval('document.querySelectorAll("#listings .listing")[0].querySelector("h3")'
                     '.textContent.startsWith(%r)' % (proc + ' ')), 'first listing is %s' % proc)
        src = b.eval('document.querySelectorAll("#listings .listing")[0]'
                     '.querySelectorAll("tr.sline").length')
        check(src > 0, '%s: %d source rows while the source is readable' % (proc, src))
        # its instructions sorted by samples, then back in address order
        asm = [(ln.split()[1], int(ln.split()[0])) for ln in open(asm_list)
               if re.match(r'^\s*\d+\s+0x[0-9a-f]+\s', ln)]
        first = '#listings .listing table.asmtab'
        b.click(first + ' th', 0)
        got = b.eval('[...document.querySelector(%r).querySelectorAll("tr.insn")].map(r => '
                     '[r.dataset.addr, +r.firstChild.textContent])' % first)
        want = sorted(asm, key=lambda x: -x[1])
        check([c for _, c in got] == [c for _, c in want] and sorted(map(tuple, got)) == sorted(asm),
              '%s instructions sorted by samples: %s (dcpilist -asm: %s)' % (proc, got, asm))
        b.click(first + ' th', header(b, first, 'address'))
        got = b.eval('[...document.querySelector(%r).querySelectorAll("tr.insn")].map(r => '
                     'r.dataset.addr)' % first)
        check(got == [a for a, _ in asm], '%s instructions by address again: %s' % (proc, got))
        b.close()

        b = Browser(os.path.join(tmp, 'chrome'), 1200, 900)
        check(b.open('file://' + page_nosrc) == 'rendered', 'page without source drawn')
        common_checks(b, 'page without source')
        want = [ln.split()[1] for ln in open(asm_list) if re.match(r'^\s*\d+\s+0x[0-9a-f]+\s', ln)]
        L = '#listings .listing'
        addrs = b.eval('[...document.querySelectorAll(%r)[0].querySelectorAll("tr.insn")]'
                       '.map(r => r.dataset.addr)' % L)
        src = b.eval('document.querySelectorAll(%r)[0].querySelectorAll("tr.sline").length' % L)
        notes = b.eval('[...document.querySelectorAll(%r)[0].querySelectorAll(".note")]'
                       '.map(n => n.textContent)' % L)
        check(src == 0, '%s without source: %d source rows' % (proc, src))
        check(addrs == want and len(want) > 3,
              '%s without source: the %d instructions of dcpilist -asm (page: %d)' %
              (proc, len(want), len(addrs)))
        check(any('source not readable here' in n for n in notes) and
              any(n.startswith('no readable source: the instructions only') for n in notes),
              '%s without source: the notes say why: %s' % (proc, notes))
    except CdpError as e:
        check(False, 'browser: %s' % e)
    finally:
        b.close()


# ---- fold ----

def fold(page, asm_list, proc):
    asm = [(ln.split()[1], int(ln.split()[0])) for ln in open(asm_list)
           if re.match(r'^\s*\d+\s+0x[0-9a-f]+\s', ln)]
    hot = [a for a, c in asm if c > 0]
    tmp = tempfile.mkdtemp(prefix='dcpi-ui-')
    b = Browser(os.path.join(tmp, 'chrome'), 1200, 900)
    L = '#listings .listing'
    q_rows = ('[...document.querySelectorAll(%r)[0].querySelectorAll("table.asmtab tbody tr")]'
              '.map(r => r.className === "insn" ? r.dataset.addr : r.textContent)' % L)
    try:
        check(b.open('file://' + page) == 'rendered', 'page drawn')
        common_checks(b, 'long procedure page')
        h0 = b.eval('document.documentElement.scrollHeight')
        rows = b.eval(q_rows)
        drawn = [r for r in rows if r.startswith('0x')]
        gaps = [int(re.search(r'(\d+) instructions? without samples', r).group(1))
                for r in rows if not r.startswith('0x')]
        button = b.eval('document.querySelectorAll(%r)[0].querySelector("button.unfold")'
                        '.textContent' % L)
        check(set(hot) <= set(drawn) and len(drawn) + sum(gaps) == len(asm) and
              len(drawn) <= 8 * len(hot) and drawn == [a for a, _ in asm if a in set(drawn)],
              '%s folded: %d of %d instructions drawn in order, every one with samples (%d), gap '
              'rows for the %d others' % (proc, len(drawn), len(asm), len(hot), sum(gaps)))
        check(button == 'show the %d instructions without samples' % sum(gaps),
              'the button says "%s"' % button)
        b.click('%s button.unfold' % L)
        rows = b.eval(q_rows)
        check(rows == [a for a, _ in asm], '%s unfolded: the %d instructions of dcpilist -asm (page: '
              '%d rows)' % (proc, len(asm), len(rows)))
        h1 = b.eval('document.documentElement.scrollHeight')
        check(h1 > h0 + 10 * len(asm), 'the page is %d px tall folded, %d px unfolded' % (h0, h1))
        b.click('%s button.unfold' % L)
        check(len(b.eval(q_rows)) == len(drawn) + len(gaps), 'folded again')
    except CdpError as e:
        check(False, 'browser: %s' % e)
    finally:
        b.close()


# ---- live ----

def live(page, procs_csv, prof_csv, longname, peek_txt, traces_txt):
    tmp = tempfile.mkdtemp(prefix='dcpi-ui-')
    b = Browser(os.path.join(tmp, 'chrome'), 1200, 900)
    try:
        live_checks(b, page, procs_csv, prof_csv, longname, peek_txt, traces_txt)
    finally:
        b.close()


def live_checks(b, page, procs_csv, prof_csv, longname, peek_txt, traces_txt):
    want = {}
    for r in csv.reader(open(procs_csv)):
        m = re.match(r'^(\d+) (.*)$', r[-1])
        if r[0].isdigit() and m:
            want[(m.group(1), m.group(2))] = r[0]
    prof = {r['procedure']: r for r in csv.DictReader(open(prof_csv))}
    try:
        check(b.open('file://' + page) == 'rendered', 'page drawn')
        common_checks(b, 'live page')
        got = b.eval('[...document.querySelectorAll("tr.psrow")].map(r => '
                     '[r.dataset.pid, r.lastChild.textContent, r.dataset.count])')
        have = {(p, c): n for p, c, n in got}
        check(have == want and len(want) >= 3,
              'processes table: %d rows as dcpiprof -procs (%d)' % (len(have), len(want)))
        col = header(b, '#processes', 'pid')
        b.click('#processes th', col)
        pids = [int(p) for p, _, _ in b.eval('[...document.querySelectorAll("tr.psrow")].map(r => '
                                             '[r.dataset.pid, 0, 0])')]
        check(pids == sorted(pids, reverse=True), 'processes sorted by pid: %s' % pids)
        b.click('#processes th', col)
        pids2 = [int(p) for p, _, _ in b.eval('[...document.querySelectorAll("tr.psrow")].map(r '
                                              '=> [r.dataset.pid, 0, 0])')]
        check(pids2 == sorted(pids), 'click again: pid smallest first: %s' % pids2)
        col = header(b, '#processes', 'command')
        b.click('#processes th', col)
        comms = b.eval('[...document.querySelectorAll("tr.psrow")].map(r => r.lastChild.textContent)')
        check(comms == sorted(comms), 'processes sorted by command: %s' % comms)

        top = b.eval('document.getElementById("callview").dataset.name')
        total = b.eval('document.querySelector("#callview p.note").textContent')
        ch = prof.get(top, {}).get('children')
        check(ch is not None and total.startswith(ch + ' samples in chains'),
              'calls view of %s: "%s" (dcpiprof children %s)' % (top, total, ch))
        # recursion: rec calls itself, even and odd call each other
        peek, recursive = parse_peek(peek_txt), parse_traces(traces_txt)
        check(recursive.get('rec', 0) > 0, 'pprof -traces has chains where rec calls itself (%d)' %
              recursive.get('rec', 0))
        for name in ('rec', 'odd', 'even'):
            b.eval('document.getElementById("callsearch").value = ""')
            b.type('#callsearch', name)
            b.click('#calls a.callpick[data-name="%s"]' % name)
            check_view(b, name, peek, 'search "%s"' % name, recursive)
        expand(b, 'callers', 'odd', peek, 'caller', recursive)
        b.click('#callers tr.crow[data-depth="0"][data-name="odd"] a.cpick')
        check_view(b, 'odd', peek, 'a click on the name odd', recursive)
        expand(b, 'callees', 'even', peek, 'callee', recursive)

        w = b.eval('(function () { var r = [...document.querySelectorAll("tr.prow")].find(r => '
                   'r.dataset.name === %r); return r ? r.getBoundingClientRect().width : -1; })()'
                   % longname)
        check(w > 0, 'row of %s drawn (%d px wide)' % (longname, w))
    except CdpError as e:
        check(False, 'browser: %s' % e)


# ---- browser: report_browser.sh's pages in one Chromium ----

DUMP_DOM = ('(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : "") + '
            'document.documentElement.outerHTML')


def browser(probe, shot, page, procs_csv, prof_csv, longname, peek_txt, traces_txt, *dumps):
    tmp = tempfile.mkdtemp(prefix='dcpi-ui-')
    try:
        b = Browser(os.path.join(tmp, 'chrome'), 1200, 900)
        b.open('file://' + probe)
        ran = b.eval('document.getElementById("x").textContent')
    except (CdpError, OSError) as e:
        print('SKIP: chromium cannot run here: %s' % e)
        sys.exit(77)
    if ran != 'ran':
        b.close()
        print('SKIP: chromium cannot run here: the probe page\'s script did not run (%r)' % ran)
        sys.exit(77)
    try:
        for p in (page,) + dumps:
            b.open('file://' + p)
            with open(re.sub(r'\.html$', '', p) + '.dom', 'w') as f:
                f.write(b.eval(DUMP_DOM) + '\n')
        live_checks(b, page, procs_csv, prof_csv, longname, peek_txt, traces_txt)
        b.call('Emulation.setDeviceMetricsOverride',
               {'width': 1400, 'height': 6000, 'deviceScaleFactor': 1, 'mobile': False})
        b.call('Emulation.setScrollbarsHidden', {'hidden': True})
        b.open('file://' + page)
        with open(shot, 'wb') as f:
            f.write(base64.b64decode(b.call('Page.captureScreenshot', {'format': 'png'})['data']))
    except CdpError as e:
        check(False, 'browser: %s' % e)
    finally:
        b.close()


if __name__ == '__main__':
    if len(sys.argv) == 8 and sys.argv[1] == 'synth':
        synth(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == 'fold':
        fold(*sys.argv[2:])
    elif len(sys.argv) == 8 and sys.argv[1] == 'live':
        live(*sys.argv[2:])
    elif len(sys.argv) >= 10 and sys.argv[1] == 'browser':
        browser(*sys.argv[2:])
    else:
        sys.exit('usage: report_ui.py synth PAGE PAGE_NOSRC PROF_CSV PEEK_TXT ASM_LIST PROC | '
                 'fold PAGE ASM_LIST PROC | '
                 'live PAGE PROCS_CSV PROF_CSV LONGNAME PEEK_TXT TRACES_TXT | '
                 'browser PROBE SHOT PAGE PROCS_CSV PROF_CSV LONGNAME PEEK_TXT TRACES_TXT [DUMP ...]')
    sys.exit(1 if fails else 0)
