// stratum serve: live updates and in-place gate decisions (docs/serve.md).
//
// The server renders every page; this script never builds markup from
// data. It listens to the page's server-sent event stream, fetches the
// page again when the stream says something changed, and swaps in the
// parts (data-region) whose version (data-v) changed. In a region of
// keyed parts (data-keyed) only the parts whose version changed are
// replaced, so an open <details> or a note being typed stays. A part the
// person has begun to decide on is never replaced under them: it is marked
// stale instead, and a decision sent from it is refused by the server.
// A closed step of a long run's page gets its details from the step's
// page, rendered by the server too, when it is opened.
'use strict';
(function () {
  const body = document.body;
  const conn = document.getElementById('conn');
  const NAME = 'stratum.decider';
  let fetching = false;
  let again = false;

  function setConn(state) {
    if (!conn) return;
    conn.textContent = state;
    conn.className = 'conn ' + state;
  }

  function isDirty(el) {
    return el.hasAttribute('data-dirty') || el.querySelector('[data-dirty]') !== null;
  }

  function markStale(el) {
    el.classList.add('stale');
    const note = el.querySelector('.stale-note');
    if (note) note.hidden = false;
  }

  function fillNames(root) {
    let name = '';
    try { name = localStorage.getItem(NAME) || ''; } catch (e) { /* storage off */ }
    root.querySelectorAll('form.decide input[name=by]').forEach(function (input) {
      if (!input.value) input.value = name;
    });
  }

  function keyed(cur, fresh) {
    const old = new Map();
    for (const c of cur.children) {
      if (c.dataset.key) old.set(c.dataset.key, c);
    }
    const list = [];
    for (const c of Array.from(fresh.children)) {
      const k = c.dataset.key;
      const o = k ? old.get(k) : undefined;
      if (o) old.delete(k);
      if (o && o.dataset.v === c.dataset.v) {
        list.push(o);
      } else if (o && isDirty(o)) {
        markStale(o);
        list.push(o);
      } else {
        list.push(document.adoptNode(c));
      }
    }
    for (const o of old.values()) {
      if (isDirty(o)) {
        markStale(o);
        list.push(o);
      }
    }
    // Move only what must move: a part kept in place is not touched.
    list.forEach(function (n, i) {
      const at = cur.children[i];
      if (at !== n) cur.insertBefore(n, at || null);
    });
    while (cur.children.length > list.length) cur.lastElementChild.remove();
    cur.dataset.v = fresh.dataset.v;
  }

  // apply swaps in the changed regions of a page the server rendered.
  // answer is set for the answer to a decision: its message is shown.
  function apply(html, answer) {
    const doc = new DOMParser().parseFromString(html, 'text/html');
    for (const fresh of Array.from(doc.querySelectorAll('[data-region]'))) {
      const cur = document.querySelector('[data-region="' + CSS.escape(fresh.dataset.region) + '"]');
      if (!cur) continue;
      if (fresh.hasAttribute('data-sticky') && !answer) continue;
      if (cur.dataset.v === fresh.dataset.v && !answer) continue;
      if (fresh.hasAttribute('data-keyed')) {
        keyed(cur, fresh);
      } else if (isDirty(cur)) {
        markStale(cur);
      } else {
        cur.replaceWith(document.adoptNode(fresh));
      }
    }
    if (doc.body && doc.body.dataset.cursor !== undefined) body.dataset.cursor = doc.body.dataset.cursor;
    if (doc.title) document.title = doc.title;
    fillNames(document);
    body.dispatchEvent(new CustomEvent('stratum:updated'));
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const res = await fetch(location.href, { credentials: 'same-origin', cache: 'no-store' });
      if (res.ok) apply(await res.text(), false);
    } catch (e) {
      setConn('offline');
    } finally {
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  function showMessage(text) {
    const region = document.querySelector('[data-region="flash"]');
    if (!region) return;
    const div = document.createElement('div');
    div.className = 'flash bad';
    const p = document.createElement('p');
    p.textContent = text;
    div.appendChild(p);
    region.replaceChildren(div);
  }

  document.addEventListener('input', function (e) {
    const form = e.target.closest && e.target.closest('form.decide');
    const part = form && form.closest('[data-key]');
    if (part && e.target.name === 'note') part.setAttribute('data-dirty', '1');
  });

  document.addEventListener('click', function (e) {
    const btn = e.target.closest && e.target.closest('button.refresh');
    if (!btn) return;
    const part = btn.closest('[data-key]');
    if (part) { part.removeAttribute('data-dirty'); part.dataset.v = 'stale'; }
    refresh();
  });

  document.addEventListener('submit', async function (e) {
    const form = e.target;
    if (!form.matches('form.decide')) return;
    e.preventDefault();
    const data = new URLSearchParams(new FormData(form, e.submitter));
    try { localStorage.setItem(NAME, form.elements.by.value); } catch (err) { /* storage off */ }
    const buttons = form.querySelectorAll('button');
    buttons.forEach(function (b) { b.disabled = true; });
    const part = form.closest('[data-key]');
    try {
      const res = await fetch(form.action, { method: 'POST', body: data, credentials: 'same-origin' });
      const html = await res.text();
      if (part) { part.removeAttribute('data-dirty'); part.dataset.v = 'sent'; }
      if ((res.headers.get('Content-Type') || '').startsWith('text/html')) {
        apply(html, true);
      } else {
        showMessage(html);
      }
      window.scrollTo(0, 0);
    } catch (err) {
      showMessage('The decision could not be sent (' + err.message + '); nothing was decided.');
    } finally {
      buttons.forEach(function (b) { b.disabled = false; });
    }
  });

  function connect() {
    const live = body.dataset.live;
    if (!live || typeof EventSource === 'undefined') return;
    const url = live + (live.indexOf('?') >= 0 ? '&' : '?') + 'since=' + encodeURIComponent(body.dataset.cursor || '');
    const es = new EventSource(url);
    es.onopen = function () { setConn('live'); };
    es.onerror = function () { setConn('reconnecting'); };
    es.addEventListener('change', function () { refresh(); });
    es.addEventListener('failed', function () {
      setConn('offline');
      es.close();
      setTimeout(connect, 5000);
    });
  }

  // A closed step of a long run's page holds only its summary and a link
  // to the step's page (a.more): when it is opened, that page is fetched
  // and its details of the step are put in place of the link.
  async function loadStep(el) {
    const more = el.querySelector(':scope > a.more');
    if (!more || el.dataset.loading) return;
    const src = more.getAttribute('href');
    el.dataset.loading = '1';
    try {
      const res = await fetch(src, { credentials: 'same-origin', cache: 'no-store' });
      if (!res.ok) throw new Error('status ' + res.status);
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      const fresh = doc.getElementById(el.id);
      if (!fresh) throw new Error('the step is not on its page');
      // Replaced by a live update meanwhile: the new card loads itself.
      if (!el.isConnected || !more.isConnected) return;
      const parts = Array.from(fresh.children).filter(function (c) { return c.tagName !== 'SUMMARY'; });
      more.remove();
      parts.forEach(function (c) { el.appendChild(document.adoptNode(c)); });
      el.dispatchEvent(new CustomEvent('stratum:step-loaded', { bubbles: true }));
    } catch (err) {
      const old = el.querySelector(':scope > .load-failed');
      if (old) old.remove();
      const note = document.createElement('span');
      note.className = 'hint load-failed';
      note.textContent = ' (could not be loaded here: ' + err.message + ')';
      more.after(note);
    } finally {
      delete el.dataset.loading;
    }
  }

  document.addEventListener('toggle', function (e) {
    const el = e.target;
    if (el.open && el.matches && el.matches('details.step')) loadStep(el);
  }, true);

  // A step reached from the graph (#step-ID) opens.
  function openTarget() {
    const id = decodeURIComponent(location.hash.slice(1));
    const el = id ? document.getElementById(id) : null;
    if (el && el.tagName === 'DETAILS') el.open = true;
  }
  window.addEventListener('hashchange', openTarget);

  fillNames(document);
  openTarget();
  connect();
})();
