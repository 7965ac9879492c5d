# tests/e2e/lib/web_ui.py - dcpiweb used as a person uses it, in headless Chromium driven through
# the DevTools protocol (lib/cdp.py: mouse clicks where the elements are drawn, keys typed into
# the inputs, navigation by the page's own links). Called by web_browser.sh with one JSON file of
# what the other tools say about the same database:
#
#   web_ui.py EXPECT.json
#     url, live_url      the two servers (a database; a database whose dcpid runs)
#     e1, e2             the epochs (E1: work-values and the hostile program; E2: work-demo)
#     sel                (optional) the selection of the views instead of epoch=E1 (the fleet's
#                        hosts=...)
#     prof               dcpiprof -epoch E1 -json
#     prof_text          the same, as text (the JSON link's reply must be it)
#     lea_addr, lea_hot  the lea of lea_loop and its hotlist as dcpilist -asm -vtrace vp-classic
#                        prints it ("" when too few value samples for the check)
#     miss_addr, miss_text  (optional) an instruction of lea_loop marked missing, and its
#                        "missing: reason" as dcpilist prints it
#     diff               dcpidiff -json @E1 @E2
#     xss, comm          the hostile symbol and command name
#     damaged            (optional) an epoch with a damaged profile: its page shows the warning
#     steps              (optional) the names of the checks to run (web_fleet.sh: a fleet store
#                        has no epochs to compare and no daemon), else every one
#     budget             (optional) seconds for it all, 200 by default: the caller's time limit
#                        less a margin, so that a step out of time fails with its message
#
# Checks: the procedures of E1 as dcpiprof's rows; the hostile names drawn as text (no element
# made of them, no dialog); typing a filter; a click on the hottest procedure reaches its
# listing, with the lea's hotlist as dcpilist prints it; its callers and callees; the flame graph
# zoomed by a click on a frame, its search; two epochs picked in the selection bar give the diff
# view with dcpidiff's rows; the JSON link gives dcpiprof -json; a damaged profile is a warning
# in the page; the live view's count grows
# while dcpid runs. Prints one line per check, "FAIL: ..." and exit 1 when one fails; "SKIP:"
# and exit 77 when chromium cannot start; then one line of the time each step took.
#
# One Chromium for every step. No fixed sleep: what a click or a key changes is polled for (every
# 50 ms) until it holds or a deadline passes, 60 s for a page or a count to come and 20 s for
# what a page's event handler does at once (seconds where an idle machine takes milliseconds),
# all within the budget: a loaded machine is slower, never wrong.
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CdpError  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    print(('ok: ' if ok else 'FAIL: ') + what)
    if not ok:
        fails += 1


def wait(b, cond, what, timeout=60):
    """Poll the JavaScript expression cond until it is truthy; its value, or CdpError."""
    t0, deadline = time.time(), b.until(timeout)
    while time.time() < deadline:
        try:
            v = b.eval(cond)
        except CdpError:
            if b.proc.poll() is not None:
                raise
            v = None  # a navigation in progress
        if v:
            return v
        time.sleep(0.05)
    spent = b.deadline and time.time() >= b.deadline
    raise CdpError('%s: not within %.1f s%s' % (what, time.time() - t0,
                                                 ' (the budget is spent)' if spent else ''))


def settle(b, expr, ok, timeout=20):
    """After a click or keys: poll the JavaScript expression expr until ok(its value); its last
    value either way (the check that follows says what it is)."""
    deadline = b.until(timeout)
    while True:
        v = b.eval(expr)
        if ok(v) or time.time() >= deadline:
            return v
        time.sleep(0.05)


def navigated(b, old):
    """After a click on a link: the new page drawn (or failed)."""
    return wait(b, '(location.href !== %s && document.readyState === "complete") ? '
                   'document.documentElement.getAttribute("data-state") : null' % json.dumps(old),
                'the page after the click')


def no_errors(b, what):
    e = b.eval('document.getElementById("errors").textContent')
    check(not e, what + ': no errors in the page' + (' (%s)' % e if e else ''))


def procs_view(b, X):
    check(b.open(X['url'] + '/?' + X.get('sel', 'epoch=' + X['e1'])) == 'rendered',
          'procedures view drawn')
    no_errors(b, 'procedures view')
    rows = b.eval('[...document.querySelectorAll("tr.prow")].map(r => [r.dataset.name, +r.dataset.count])')
    want = [[r['procedure'], r['counts'][X['prof']['sort_event']]] for r in X['prof']['rows']]
    check(rows[:20] == want[:20], 'procedure rows = dcpiprof -json\'s (%d rows, top %s %d)' %
          (len(rows), rows[0][0] if rows else '-', rows[0][1] if rows else 0))
    xss = b.eval('[...document.querySelectorAll("tr.prow td.proc")].filter(t => t.textContent.startsWith(%s)).length'
                 % json.dumps(X['xss']))
    check(xss == 1, 'the hostile symbol is a procedure row, as text')
    check(b.eval('document.querySelectorAll("img").length') == 0, 'no <img> element made of it')


def filter_view(b, X):
    b.type('#procfilter', 'loop')
    want = [r['procedure'] for r in X['prof']['rows'] if 'loop' in r['procedure'].lower()]
    names = settle(b, '[...document.querySelectorAll("tr.prow")].map(r => r.dataset.name)',
                   lambda v: v == want)
    check(names == want and names, 'typing "loop" keeps %s' % names)


def listing_view(b, X):
    b.open(X['url'] + '/?' + X.get('sel', 'epoch=' + X['e1']))
    hottest = X['prof']['rows'][0]['procedure']
    old = b.eval('location.href')
    b.click('tr.prow td.proc a', 0)
    check(navigated(b, old) == 'rendered', 'a click on %s reaches its listing' % hottest)
    no_errors(b, 'listing view')
    h = b.eval('(document.querySelector("#listings h3") || {}).textContent || ""')
    check(h.startswith(hottest), 'the listing is %s\'s: %r' % (hottest, h[:80]))
    if not X['lea_hot']:
        print('lea hotlist check not run: too few value samples')
        return
    got = b.eval('(function () { var r = document.querySelector(\'tr.insn[data-addr="%s"]\');'
                 ' var c = r && r.querySelector("td.hot"); return c ? c.textContent : null; })()'
                 % X['lea_addr'])
    check(got == X['lea_hot'], 'lea at %s: page %r, dcpilist %r' % (X['lea_addr'], got, X['lea_hot']))
    m = re.match(r'[a-z0-9]+: \(([0-9.]+)% 0x7\)', got or '')
    check(bool(m), 'its hotlist starts with 0x7 and its share (%s%%)' % (m.group(1) if m else '?'))
    if X.get('miss_addr'):
        got = b.eval('(function () { var r = document.querySelector(\'tr.insn[data-addr="%s"]\');'
                     ' var c = r && r.querySelector("td.hot"); return c ? c.textContent : null; })()'
                     % X['miss_addr'])
        check(got == X['miss_text'], 'missing mark at %s: page %r, dcpilist %r' %
              (X['miss_addr'], got, X['miss_text']))


def calls_view(b, X):
    b.open(X['url'] + '/?epoch=' + X['e1'])
    hottest = X['prof']['rows'][0]['procedure']
    old = b.eval('location.href')
    b.click('tr.prow td.proc a.tocalls', 0)
    check(navigated(b, old) == 'rendered', 'the callers/callees link of %s' % hottest)
    check(b.eval('document.getElementById("callview").dataset.name') == hottest,
          'callers and callees of %s shown' % hottest)


def flame_view(b, X):
    check(b.open(X['url'] + '/?view=flame&' + X.get('sel', 'epoch=' + X['e1'])) == 'rendered',
          'flame graph drawn')
    no_errors(b, 'flame view')
    sel = '.fr:not(.anc)[data-name="lea_loop"]'
    w0 = b.eval('parseFloat(document.querySelector(%s).style.width)' % json.dumps(sel))
    b.click(sel)
    w1, anc = settle(b, '[parseFloat(document.querySelector(%s).style.width), '
                        'document.querySelectorAll(".fr.anc").length]' % json.dumps(sel),
                     lambda v: v[0] != w0 and v[1] > 0)
    check(w1 > w0 and abs(w1 - 100) < 0.01 and anc > 0,
          'a click on lea_loop zooms: width %.1f%% -> %.1f%%, %d ancestors above' % (w0, w1, anc))
    b.click('.fr.anc', 0)  # the root: zoom out
    w2, anc = settle(b, '[parseFloat(document.querySelector(%s).style.width), '
                        'document.querySelectorAll(".fr.anc").length]' % json.dumps(sel),
                     lambda v: v[0] == w0 and v[1] == 0)
    check(w2 == w0 and anc == 0, 'a click on the root zooms out: width %.1f%%, %d ancestors' % (w2, anc))
    b.type('#flamesearch', 'lea')
    m, hits = settle(b, '[document.getElementById("flamematch").textContent, '
                        'document.querySelectorAll(".fr.hit").length]',
                     lambda v: v[0].startswith('matched ') and v[1] > 0)
    check(m.startswith('matched ') and hits > 0, 'search "lea": %r, %d frames lit' % (m, hits))


def open_diff(b, X, fields, event, what, name):
    """The diff view reached from the selection bar: each (field, value) of fields set with its
    event, then Apply; the view's rows (cells' texts)."""
    b.open(X['url'] + '/')
    for key, val in fields:
        b.eval('(function () { var s = document.getElementById("sel-%s"); s.value = %s; '
               's.dispatchEvent(new Event("%s")); })()' % (key, json.dumps(val), event))
    old = b.eval('location.href')
    b.click('#sel-apply')
    check(navigated(b, old) == 'rendered', what + ': the diff view')
    no_errors(b, name)
    check('view=diff' in b.eval('location.href'), 'its URL says view=diff')
    return b.eval('[...document.querySelectorAll("tr.drow")].map(r => [...r.children].map(c => c.textContent))')


def fleet_diff_view(b, X):
    """The fleet's diff: hosts typed into the selection bar, the other set as HOSTS[@WINDOW]."""
    rows = open_diff(b, X, (('hosts', X['dhosts']), ('diff', X['dset'])), 'input',
                     'hosts and a set to compare typed', 'fleet diff view')
    names = set(r['name'] for r in X['diff']['rows'])
    check(rows and all(r[6] in names for r in rows),
          'diff rows (%d) are dcpidiff -fleet\'s (%d)' % (len(rows), len(names)))


def diff_view(b, X):
    rows = open_diff(b, X, (('epoch', X['e1']), ('diff', X['e2'])), 'change', 'two epochs picked',
                     'diff view')
    want = [r for r in X['diff']['rows'] if r['significant']]
    names = set(r[6] for r in rows)
    check(rows and all(r['name'] in names for r in want),
          'diff rows (%d) hold dcpidiff\'s significant ones (%d)' % (len(rows), len(want)))
    lea = [r for r in rows if r[6] == 'lea_loop']
    a = [r for r in X['prof']['rows'] if r['procedure'] == 'lea_loop'][0]['counts']
    check(lea and lea[0][0] == str(a[X['prof']['sort_event']]) and lea[0][1] == '0',
          'lea_loop: A %s, B 0 (%s)' % (a[X['prof']['sort_event']], lea[0][:2] if lea else None))


def json_link(b, X):
    b.open(X['url'] + '/?' + X.get('sel', 'epoch=' + X['e1']))
    text = b.eval('fetch(document.getElementById("json").href).then(r => r.text())')
    check(text == X['prof_text'], 'the JSON link of the view is dcpiprof -json')


def hostile_comm(b, X):
    b.open(X['url'] + '/?view=images&epoch=' + X['e1'])
    no_errors(b, 'images view')
    n = b.eval('[...document.querySelectorAll("tr.psrow")].filter(r => r.textContent.includes(%s)).length'
               % json.dumps(X['comm']))
    check(n == 1, 'the command %s is a process row, as text' % X['comm'])


def damage_view(b, X):
    if not X.get('damaged'):
        return
    check(b.open(X['url'] + '/?epoch=' + X['damaged']) == 'rendered', 'a damaged epoch is drawn')
    d = b.eval('document.getElementById("damage").hidden ? "" : '
               'document.getElementById("damage").textContent')
    check(d.startswith('damaged: ') and 'skipped' in d, 'its warning is in the page: %r' % d[:120])


def live_view(b, X):
    check(b.open(X['live_url'] + '/?view=live') == 'rendered', 'live view drawn')
    no_errors(b, 'live view')
    # (the page asks dcpid a second after its last answer; on a loaded machine, later)
    c1 = int(wait(b, '+document.getElementById("livetotal").dataset.count', 'a first count'))
    c2, names = wait(b, '(function () { var c = +document.getElementById("livetotal").dataset.count;'
                        ' var n = [...document.querySelectorAll("tr.lrow")].map(r => r.dataset.name);'
                        ' return c > %d && n.indexOf("hot_mul") >= 0 ? [c, n] : null; })()' % c1,
                     'a count larger than %d with hot_mul' % c1)
    check(c2 > c1 > 0 and 'hot_mul' in names, 'the live count grows: %d -> %d (%s)' % (c1, c2, names[:3]))


def main():
    X = json.load(open(sys.argv[1]))
    t0 = time.time()
    budget = float(X.get('budget', 200))
    times = []
    try:
        b = Browser(tempfile.mkdtemp(prefix='dcpi-web-chromium.'), width=1200, height=900,
                    reach=('127.0.0.1',), deadline=t0 + budget)
    except (OSError, CdpError) as e:
        print('SKIP: chromium cannot start here: %s' % e)
        sys.exit(77)
    times.append(('chromium', time.time() - t0))
    try:
        steps = (procs_view, filter_view, listing_view, calls_view, flame_view, diff_view,
                 fleet_diff_view,
                 json_link, hostile_comm, damage_view, live_view)
        for step in steps:
            if X.get('steps') and step.__name__ not in X['steps']:
                continue
            if step is fleet_diff_view and 'dhosts' not in X:  # a fleet's (web_fleet.sh)
                continue
            t = time.time()
            if t >= b.deadline:
                check(False, '%s: not run, the budget of %d s is spent' % (step.__name__, budget))
                continue
            try:
                step(b, X)
            except CdpError as e:
                check(False, '%s: %s' % (step.__name__, e))
            times.append((step.__name__, time.time() - t))
        dialogs = [e for e in b.events if e.get('method') == 'Page.javascriptDialogOpening']
        check(not dialogs, 'no dialog opened (alert) in any view')
    finally:
        t = time.time()
        b.close()
        times.append(('close', time.time() - t))
    print('times: ' + ', '.join('%s %.2f s' % st for st in times))
    sys.exit(1 if fails else 0)


main()
