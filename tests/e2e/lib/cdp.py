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
import json
import os
import subprocess
import time


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, user_data_dir, width=1200, height=900, timeout=60, reach=()):
        """reach: hosts the page may still reach (dcpiweb's tests: '127.0.0.1'); every other
        host name maps to NOTFOUND."""
        self.timeout = timeout
        to_chrome_r, self._w = os.pipe()  # chromium reads commands on its fd 3
        self._r, from_chrome_w = os.pipe()  # and writes answers on its fd 4

        def fds():  # (in the child) the two ends to fds 3 and 4, whatever they were before
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = ['chromium', '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
                '--disable-background-networking', '--disable-extensions', '--mute-audio',
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

    def _read_message(self, deadline):
        while b'\0' not in self._buf:
            if time.time() > deadline:
                raise CdpError('chromium did not answer within %d s' % self.timeout)
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
        os.write(self._w, json.dumps(msg).encode() + b'\0')
        deadline = time.time() + self.timeout
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
        self.call('Page.navigate', {'url': url})
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            state = self.eval('document.readyState === "complete" ? '
                              'document.documentElement.getAttribute("data-state") : null')
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
