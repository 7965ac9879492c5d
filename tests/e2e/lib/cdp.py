# tests/e2e/lib/cdp.py - drive headless Chromium (Debian package chromium) through the DevTools
# protocol over a pipe (--remote-debugging-pipe: commands on its fd 3, answers on its fd 4, each
# message JSON ended by a NUL byte), with nothing but python3's standard library. For tests that
# use a page as a person would: load it, click where an element is drawn (real mouse events at
# its coordinates, so an element hidden under another one cannot be clicked), type into an
# input, read the DOM back.
#
#     b = Browser(user_data_dir, width=1200, height=900)
#     b.open('file:///tmp/r.html')          # waits for <html data-state="rendered"> (or failed)
#     b.click('#procs th:nth-child(3)')
#     rows = b.eval('[...document.querySelectorAll("tr.prow")].map(r => r.dataset.name)')
#     b.close()
#
# Every wait has a deadline and polls (a DOM condition, or select() on the pipe): nothing sleeps
# a fixed time, so a loaded machine only makes it slower. timeout bounds one call or one page
# load; deadline (seconds since the epoch, optional; settable later as b.deadline) bounds them
# all: past it every call fails at once, so that a script's own time limit is met with its
# failures printed.
import json
import os
import select
import subprocess
import time


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, user_data_dir, width=1200, height=900, timeout=60, reach=(),
                 deadline=None):
        """reach: hosts the page may still reach (dcpiweb's tests: '127.0.0.1'); every other
        host name maps to NOTFOUND."""
        self.timeout = timeout
        self.deadline = deadline
        to_chrome_r, self._w = os.pipe()  # chromium reads commands on its fd 3
        self._r, from_chrome_w = os.pipe()  # and writes answers on its fd 4

        def fds():  # (in the child) the two ends to fds 3 and 4, whatever they were before
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = ['chromium', '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
                '--disable-background-networking', '--disable-extensions', '--mute-audio',
                # the page's timers at full rate also when the renderer seems in the background
                # (a live view's refresh; a loaded machine)
                '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
                '--disable-backgrounding-occluded-windows',
                '--host-resolver-rules=MAP * ~NOTFOUND' + ''.join(', EXCLUDE ' + h for h in reach),
                '--remote-debugging-pipe',
                '--user-data-dir=' + user_data_dir, '--window-size=%d,%d' % (width, height),
                'about:blank']
        self.proc = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b''
        self._id = 0
        self.events = []
        self.session = None
        target = self.call('Target.createTarget', {'url': 'about:blank'})['targetId']
        self.session = self.call('Target.attachToTarget',
                                 {'targetId': target, 'flatten': True})['sessionId']
        self.call('Page.enable')
        self.call('Runtime.enable')
        self.call('Emulation.setDeviceMetricsOverride',
                  {'width': width, 'height': height, 'deviceScaleFactor': 1, 'mobile': False})

    def until(self, timeout=None):
        """The deadline of a wait of timeout seconds (self.timeout by default), no later than
        self.deadline."""
        t = time.time() + (self.timeout if timeout is None else timeout)
        return min(t, self.deadline) if self.deadline else t

    def _read_message(self, deadline):
        while b'\0' not in self._buf:
            left = deadline - time.time()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise CdpError('chromium did not answer within %d s%s' % (
                    self.timeout, ' (or the deadline passed)' if self.deadline else ''))
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise CdpError('chromium closed the DevTools pipe (exit status %s)' %
                               self.proc.poll())
            self._buf += chunk
        msg, self._buf = self._buf.split(b'\0', 1)
        return json.loads(msg)

    def call(self, method, params=None):
        self._id += 1
        msg = {'id': self._id, 'method': method, 'params': params or {}}
        if self.session:
            msg['sessionId'] = self.session
        deadline = self.until()
        if time.time() >= deadline:
            raise CdpError('%s: not sent, the deadline has passed' % method)
        os.write(self._w, json.dumps(msg).encode() + b'\0')
        while True:
            m = self._read_message(deadline)
            if m.get('id') == self._id:
                if 'error' in m:
                    raise CdpError('%s: %s' % (method, m['error'].get('message')))
                return m.get('result', {})
            self.events.append(m)

    def eval(self, expr):
        """The value of a JavaScript expression in the page (JSON-able), or CdpError."""
        r = self.call('Runtime.evaluate', {'expression': expr, 'returnByValue': True,
                                           'awaitPromise': True})
        if 'exceptionDetails' in r:
            d = r['exceptionDetails']
            raise CdpError('%s: %s' % (expr[:80], d.get('exception', {}).get('description',
                                                                                d.get('text'))))
        return r['result'].get('value')

    def open(self, url):
        """Load url and wait (polling) for its <html data-state> (rendered or failed), in the
        new document (the old one is marked first, so that its state is never taken)."""
        try:
            self.eval('window.__cdpOld = true')
        except CdpError:
            pass
        self.call('Page.navigate', {'url': url})
        deadline = self.until()
        while time.time() < deadline:
            try:
                state = self.eval('!window.__cdpOld && document.readyState === "complete" ? '
                                  'document.documentElement.getAttribute("data-state") : null')
            except CdpError:
                if self.proc.poll() is not None or time.time() >= deadline:
                    raise
                state = None  # between two documents
            if state:
                return state
            time.sleep(0.05)
        raise CdpError('%s: not drawn within %d s' % (url, self.timeout))

    def click(self, selector, index=0):
        """Scroll the index-th element matching selector into view and click its middle with
        the mouse. CdpError when there is no such element or another element is drawn there."""
        at = self.eval('''(function () {
            var e = document.querySelectorAll(%s)[%d];
            if (!e) return null;
            e.scrollIntoView({block: 'center', inline: 'center'});
            var r = e.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
            var hit = document.elementFromPoint(x, y);
            return [x, y, !!hit && (hit === e || e.contains(hit))];
        })()''' % (json.dumps(selector), index))
        if at is None:
            raise CdpError('no element %s [%d] to click' % (selector, index))
        if not at[2]:
            raise CdpError('%s [%d] is covered by another element' % (selector, index))
        for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
            self.call('Input.dispatchMouseEvent', {'type': kind, 'x': at[0], 'y': at[1],
                                                   'button': 'left', 'clickCount': 1})

    def type(self, selector, text):
        """Focus the element and type text into it, one key event per character."""
        self.click(selector)
        for ch in text:
            self.call('Input.dispatchKeyEvent', {'type': 'keyDown', 'text': ch})
            self.call('Input.dispatchKeyEvent', {'type': 'keyUp'})

    def press(self, selector, key, index=0):
        """Focus the element (without a click) and press key ('Enter', ' ') on it."""
        if not self.eval('(function () { var e = document.querySelectorAll(%s)[%d]; '
                         'if (!e) return false; e.focus(); return document.activeElement === e; '
                         '})()' % (json.dumps(selector), index)):
            raise CdpError('%s [%d] cannot take the focus' % (selector, index))
        code = {'Enter': 13, ' ': 32}[key]
        for kind in ('keyDown', 'keyUp'):
            self.call('Input.dispatchKeyEvent', {'type': kind, 'key': key, 'windowsVirtualKeyCode': code,
                                                 'code': 'Enter' if key == 'Enter' else 'Space'})

    def close(self):
        if self.proc is None:
            return
        self.session = None  # Browser.close goes to the browser, not the page
        self.deadline, self.timeout = None, min(self.timeout, 10)  # its own bound, 10 s
        try:
            self.call('Browser.close')
        except CdpError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        self.proc = None
