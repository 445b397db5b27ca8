/*
 * heaptrace's report page: everything is drawn here from the JSON that
 * heaptrace wrote into #heaptrace-data.  No library and no request: the
 * page has to work from a file on a machine without network.
 *
 * The URL's #hash sets the state (view=ID, search=REGEXP, select=T0,T1 in
 * seconds, zoom=NODE), so a link, or a headless browser in tests, can
 * open the page as it was left.
 */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('heaptrace-data').textContent);
  var SVGNS = 'http://www.w3.org/2000/svg';

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (c) { e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }

  function svg(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }

  function group(n) { return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }

  function bytes(n) {
    var a = Math.abs(n), u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (a >= 1024 && i < u.length - 1) { a /= 1024; i++; }
    /* 512 KiB, 1.5 MiB, 1.02 MiB: no trailing zeros */
    return (n < 0 ? '-' : '') + (i ? +a.toFixed(a < 10 ? 2 : 1) : a) + ' ' + u[i];
  }

  function secs(s) {
    if (!s) return '0';
    if (s < 1) return (s * 1000).toFixed(s < 0.01 ? 2 : 0) + ' ms';
    return s.toFixed(s < 10 ? 3 : 1) + ' s';
  }

  function amount(n, unit) {
    return unit === 'bytes' ? bytes(n) + ' (' + group(n) + ' B)' : group(n) + ' ' + unit;
  }

  function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + '%' : '-'; }

  /* #view=alloc_space&search=leak&select=0.1,0.5 */
  var P = {};
  location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
    if (!kv) return;
    var i = kv.indexOf('=');
    P[decodeURIComponent(i < 0 ? kv : kv.slice(0, i))] = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1));
  });

  var total = D.total, S = D.stacks, names = D.frames.name, sites = D.frames.site;
  /* --suppressions: suppressed stacks leave the leak views; the summary says how much went. */
  var SUP = D.suppressed || { bytes: 0, objects: 0, stacks: 0 };
  if (S.suppressed) S.suppressed.forEach(function (x, s) { if (x) { S.inuse_bytes[s] = 0; S.inuse_objects[s] = 0; } });

  /* ---- the tree: node i's parent (i - nodes[2i]) and frame; parents precede children ---- */
  var N = D.nodes.length / 2, parent = new Int32Array(N), frameOf = new Int32Array(N), depth = new Int32Array(N);
  var kids = [];
  for (var i = 0; i < N; i++) {
    parent[i] = i ? i - D.nodes[2 * i] : -1;
    frameOf[i] = D.nodes[2 * i + 1];
    kids.push([]);
    if (i) {
      depth[i] = depth[parent[i]] + 1;
      kids[parent[i]].push(i);
    }
  }
  /* Name order: a frame keeps its place when the view changes. */
  kids.forEach(function (k) {
    if (k.length > 1) k.sort(function (a, b) { return names[frameOf[a]] < names[frameOf[b]] ? -1 : names[frameOf[a]] > names[frameOf[b]] ? 1 : a - b; });
  });

  var sumCache = {};
  /* Each node's value under a counter: its stacks', negative ones (a diff's) left out. */
  function sums(key) {
    if (sumCache[key]) return sumCache[key];
    var v = new Float64Array(N), col = S[key], leaf = S.leaf;
    for (var s = 0; s < leaf.length; s++) if (col[s] > 0) v[leaf[s]] += col[s];
    for (var n = N - 1; n > 0; n--) v[parent[n]] += v[n];
    return (sumCache[key] = v);
  }

  /* A stack's frames, innermost first. */
  function path(s) {
    var out = [];
    for (var n = S.leaf[s]; n > 0; n = parent[n]) out.push(frameOf[n]);
    return out;
  }

  function frameText(f) { return names[f] + (sites[f] ? '  ' + sites[f] : ''); }

  var VIEWS = [
    { id: 'inuse_space', label: D.ended ? 'in use at exit' : 'in use at end', key: 'inuse_bytes', unit: 'bytes', pair: 'inuse_objects' },
    { id: 'peak_space', label: 'in use at peak', key: 'peak_bytes', unit: 'bytes' },
    { id: 'alloc_space', label: 'allocated bytes', key: 'alloc_bytes', unit: 'bytes', pair: 'alloc_objects' },
    { id: 'alloc_objects', label: 'allocated objects', key: 'alloc_objects', unit: 'objects', pair: 'alloc_bytes' },
    { id: 'inuse_objects', label: D.ended ? 'leaked blocks' : 'live blocks at the stop', key: 'inuse_objects', unit: 'blocks', pair: 'inuse_bytes' },
    { id: 'temporary', label: 'temporary', key: 'temporary', unit: 'allocations' },
    { id: 'realloc_space', label: 'bytes copied by realloc', key: 'realloc_bytes', unit: 'bytes', pair: 'realloc_objects' },
    { id: 'realloc_objects', label: 'reallocs', key: 'realloc_objects', unit: 'reallocs', pair: 'realloc_bytes' }
  ];
  var ALIAS = { leaked: 'inuse_objects', peak: 'peak_space', inuse: 'inuse_space' };
  function findView(id) {
    id = ALIAS[id] || id;
    for (var k = 0; k < VIEWS.length; k++) if (VIEWS[k].id === id) return VIEWS[k];
    return null;
  }
  var view = findView(P.view) || findView(D.value) || VIEWS[0];
  var zoom = 0, matchRe = null;

  /* ---- summary ---- */
  function summary() {
    $('program').textContent = D.program || (D.is_diff ? 'diff' : '');
    $('command').textContent = D.command || '';
    document.title = 'heaptrace: ' + (D.program || D.command || 'report');
    var rows = [], dur = D.duration;
    function row(k, v, id) { rows.push(el('tr', id ? { 'data-figure': id } : {}, [el('td', { text: k }), el('td', { text: v })])); }
    row('PID', String(D.pid));
    if (D.counters.some(function (k) { return k[0] === 'oom_kills' && k[1] > 0; }))
      row('OOM', "killed by the kernel's OOM killer: this is the heap at the kill", 'oom');
    row('traced for', secs(dur), 'duration');
    if (D.peak.bytes) row('peak', amount(D.peak.bytes, 'bytes') + ' in use, ' + secs(D.peak.t) + ' after the start', 'peak');
    row('in use at end', amount(total.inuse_bytes, 'bytes') + ' in ' + group(total.inuse_objects) + ' blocks', 'inuse');
    if (SUP.stacks) row('suppressed', amount(SUP.bytes, 'bytes') + ' in ' + group(SUP.objects) + ' blocks of ' +
      group(SUP.stacks) + ' stacks (--suppressions: not counted as leaked)', 'suppressed');
    var leakNote = D.min_age > 0 ? ' (blocks at least ' + D.min_age + ' s old)' :
      D.ended ? ' (live when the process exited)' : ' (the process was still running: live at the stop)';
    row('leaked', amount(total.inuse_bytes - SUP.bytes, 'bytes') + leakNote, 'leaked');
    if (D.realloc && D.realloc.objects) row('reallocs', group(D.realloc.objects) + ' reallocs of a block, ' +
      amount(D.realloc.bytes, 'bytes') + ' copied by those that moved it', 'realloc');
    /* The process's memory beside the heap, and what of it only heaptrace put there. */
    if (D.rss) row('RSS', amount(D.rss.anon + D.rss.file + D.rss.shmem, 'bytes') + ' resident' +
      (D.rss.at_exit ? ' at its exit' : '') + ' (anon ' + bytes(D.rss.anon) + ', file ' + bytes(D.rss.file) +
      ', shmem ' + bytes(D.rss.shmem) + "), of which heaptrace's own mappings (its stub, ring and tables) " +
      amount(D.rss.heaptrace, 'bytes'), 'rss');
    row('allocated', amount(total.alloc_bytes, 'bytes') + ' in ' + group(total.alloc_objects) + ' allocations', 'allocated');
    row('temporary', group(total.temporary) + ' allocations freed within 1 ms (' + pct(total.temporary, total.alloc_objects) + ')', 'temporary');
    row('allocations/s', dur > 0 ? group(total.alloc_objects / dur) : '-', 'rate');
    if (D.sample_rate) row('sampled', 'one allocation per ' + group(D.sample_rate) + ' bytes: figures are estimates');
    var t = $('figures');
    rows.forEach(function (r) { t.appendChild(r); });
    /* Only counters that are not 0: a row of 27 zeros hid the one that mattered. */
    var c = $('counters'), lost = 0;
    D.counters.forEach(function (k) {
      if (!k[1]) return;
      var bad = k[2] && k[1] > 0;
      lost += bad ? 1 : 0;
      c.appendChild(el('span', { cls: 'counter' + (k[2] ? ' loss' : '') + (bad ? ' lost' : ''), 'data-counter': k[0],
        title: k[2] ? 'a loss counter: non-zero means the profile misses something (docs/limits-and-safety.md)' : 'an event counter',
        text: k[0] + ' ' + group(k[1]) }));
    });
    if (!lost) c.appendChild(el('span', { cls: 'counter', id: 'no-losses',
      title: 'every loss counter is 0: nothing the profile could miss was missed (docs/limits-and-safety.md)',
      text: 'no losses' }));
    c.setAttribute('data-losses', lost);
  }

  /* ---- the heap over time ---- */
  var chart = null;

  function niceMax(v) {
    if (v <= 0) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(v))), m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  /* The same in binary units, so that the axis reads 512 KiB, 1 MiB, ... */
  function niceBytes(v) {
    var unit = 1;
    while (v >= 1024 * unit) unit *= 1024;
    return niceMax(v / unit) * unit;
  }

  function renderChart() {
    var T = D.timeline, box = $('chart');
    if (!T) {
      box.appendChild(el('div', { cls: 'empty', text: 'No timeline: this profile was not taken while tracing with -f html.' }));
      return;
    }
    var W = 1000, H = 240, ml = 74, mr = 62, mt = 16, mb = 26, pw = W - ml - mr, ph = H - mt - mb;
    var n = T.t.length, tmax = Math.max(D.duration * 1000, T.t[n - 1], 1), bmax = 0, omax = 0, ipeak = 0, rmax = 0;
    var R = T.rss || [], RH = T.rss_heaptrace || [], hmax = 0;
    for (var i = 0; i < n; i++) {
      if (T.bytes[i] > bmax) { bmax = T.bytes[i]; ipeak = i; }
      if (T.objects[i] !== null && T.objects[i] > omax) omax = T.objects[i];
      if (R[i] != null && R[i] > rmax) rmax = R[i];
      if (RH[i] != null && RH[i] > hmax) hmax = RH[i];
    }
    /* RSS on the bytes axis: the heap is part of it, and the gap is what the heap does not explain. */
    var ytop = niceBytes(Math.max(bmax, rmax)), otop = niceMax(omax);
    function x(ms) { return ml + ms / tmax * pw; }
    function y(b) { return mt + ph - Math.max(b, 0) / ytop * ph; }
    function yo(o) { return mt + ph - Math.max(o, 0) / otop * ph; }
    var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', id: 'chart-svg',
      'data-points': n, 'data-max': bmax, 'data-peak-ms': T.t[ipeak], 'data-rss-max': rmax, 'data-rss-heaptrace-max': hmax });
    for (var g = 0; g <= 4; g++) {
      var gy = mt + ph - g / 4 * ph;
      svg('line', { x1: ml, x2: ml + pw, y1: gy, y2: gy, 'class': 'grid' }, s);
      svg('text', { x: ml - 4, y: gy + 3, 'text-anchor': 'end', 'class': 'axis' }, s).textContent = bytes(ytop * g / 4);
      if (omax > 0) svg('text', { x: ml + pw + 4, y: gy + 3, 'class': 'axis' }, s).textContent = group(otop * g / 4);
    }
    for (var k = 0; k <= 8; k++) {
      svg('text', { x: ml + k / 8 * pw, y: H - 8, 'text-anchor': 'middle', 'class': 'axis' }, s).textContent = secs(tmax * k / 8 / 1000);
    }
    var pts = [], opts = [], rpts = [];
    for (i = 0; i < n; i++) {
      pts.push(x(T.t[i]).toFixed(1) + ',' + y(T.bytes[i]).toFixed(1));
      if (T.objects[i] !== null) opts.push(x(T.t[i]).toFixed(1) + ',' + yo(T.objects[i]).toFixed(1));
      if (R[i] != null) rpts.push(x(T.t[i]).toFixed(1) + ',' + y(R[i]).toFixed(1));
    }
    svg('polygon', { points: ml + ',' + (mt + ph) + ' ' + pts.join(' ') + ' ' + x(T.t[n - 1]).toFixed(1) + ',' + (mt + ph), 'class': 'bytes-area' }, s);
    svg('polyline', { points: opts.join(' '), 'class': 'objects-line', id: 'objects-line' }, s);
    svg('polyline', { points: rpts.join(' '), 'class': 'rss-line', id: 'rss-line', 'data-points': rpts.length }, s);
    svg('polyline', { points: pts.join(' '), 'class': 'bytes-line', id: 'inuse-line' }, s);
    T.marks.forEach(function (m, j) {
      var l = svg('line', { x1: x(m), x2: x(m), y1: mt, y2: mt + ph, 'class': 'snapshot', 'data-snapshot': j + 1 }, s);
      svg('title', {}, l).textContent = 'snapshot ' + (j + 1) + ' at ' + secs(m / 1000);
    });
    if (bmax > 0) {
      var px = x(T.t[ipeak]), py = y(bmax);
      svg('circle', { cx: px, cy: py, r: 4, 'class': 'peak', id: 'peak-marker' }, s);
      var lbl = svg('text', { x: px + (px > ml + pw * 0.75 ? -8 : 8), y: py + 12, 'class': 'peak-label',
        'text-anchor': px > ml + pw * 0.75 ? 'end' : 'start' }, s);
      lbl.textContent = 'peak ' + bytes(bmax) + ' at ' + secs(T.t[ipeak] / 1000);
    }
    var legend = svg('text', { x: ml + 6, y: mt + 10, 'class': 'legend' }, s);
    legend.textContent = '\u2014 in-use bytes   ' + (rmax > 0 ? '\u2014 RSS (green; heaptrace\'s own mappings at most ' + bytes(hmax) + ' of it)   ' : '') + '- - live blocks (right axis)   ' + n + ' samples, one per ' + secs(T.period);
    var sel = svg('rect', { x: 0, y: mt, width: 0, height: ph, 'class': 'selection', visibility: 'hidden' }, s);
    box.appendChild(s);
    chart = { svg: s, sel: sel, x: x, ml: ml, pw: pw, W: W, tmax: tmax };

    var drag = null;
    function ms(ev) {
      var r = s.getBoundingClientRect(), vx = (ev.clientX - r.left) / r.width * W;
      return Math.min(Math.max((vx - ml) / pw * tmax, 0), tmax);
    }
    s.addEventListener('mousedown', function (ev) { drag = ms(ev); ev.preventDefault(); });
    window.addEventListener('mousemove', function (ev) { if (drag !== null) showSelection(drag, ms(ev)); });
    window.addEventListener('mouseup', function (ev) {
      if (drag === null) return;
      var a = drag, b = ms(ev);
      drag = null;
      if (Math.abs(b - a) < tmax / 500) { sel.setAttribute('visibility', 'hidden'); $('range').textContent = ''; return; }
      select(Math.min(a, b) / 1000, Math.max(a, b) / 1000);
    });
  }

  function showSelection(a, b) {
    var lo = Math.min(a, b), hi = Math.max(a, b);
    chart.sel.setAttribute('x', chart.x(lo));
    chart.sel.setAttribute('width', Math.max(chart.x(hi) - chart.x(lo), 1));
    chart.sel.setAttribute('visibility', 'visible');
  }

  /* What the time range [t0, t1] s allocated that was still live at the end. */
  function select(t0, t1) {
    var box = $('range');
    box.textContent = '';
    if (chart) showSelection(t0 * 1000, t1 * 1000);
    if (!D.live) {
      box.appendChild(el('div', { cls: 'empty', text: 'Live blocks by allocation time were not recorded in this profile.' }));
      return;
    }
    var L = D.live, rows = L.rows, per = {}, objs = 0, sum = 0;
    for (var r = 0; r < rows.length; r += 4) {
      var from = rows[r + 1] * L.bin_ms, to = from + L.bin_ms;
      if (from >= t1 * 1000 || to <= t0 * 1000) continue;
      var st = rows[r];
      if (!per[st]) per[st] = { s: st, objects: 0, bytes: 0 };
      per[st].objects += rows[r + 2];
      per[st].bytes += rows[r + 3];
      objs += rows[r + 2];
      sum += rows[r + 3];
    }
    var list = Object.keys(per).map(function (k) { return per[k]; }).sort(function (a, b) { return b.bytes - a.bytes; });
    box.setAttribute('data-t0', t0);
    box.setAttribute('data-t1', t1);
    box.setAttribute('data-bytes', sum);
    box.setAttribute('data-objects', objs);
    box.appendChild(el('h2', { text: 'Allocated between ' + secs(t0) + ' and ' + secs(t1) + ' and still live at the end: ' +
      amount(sum, 'bytes') + ' in ' + group(objs) + ' blocks, ' + list.length + ' stacks' +
      ' (in steps of ' + secs(L.bin_ms / 1000) + ')' }));
    if (list.length) box.appendChild(stackTable(list.slice(0, D.top), [
      { h: 'bytes', f: function (e) { return group(e.bytes); } },
      { h: 'blocks', f: function (e) { return group(e.objects); } }]));
  }

  /* A table of stacks: the columns given, then the allocation site and the path. */
  function stackTable(list, cols) {
    var t = el('table', { cls: 'stacks' }), head = el('tr');
    head.appendChild(el('th', { text: '#' }));
    cols.forEach(function (c) { head.appendChild(el('th', { text: c.h })); });
    head.appendChild(el('th', { text: 'allocated by' }));
    head.appendChild(el('th', { text: 'called from' }));
    t.appendChild(head);
    list.forEach(function (e, k) {
      var fr = path(e.s), tr = el('tr', { 'data-stack': e.s });
      tr.appendChild(el('td', { cls: 'num', text: String(k + 1) }));
      cols.forEach(function (c) { tr.appendChild(el('td', { cls: 'num', text: c.f(e) })); });
      tr.appendChild(el('td', { cls: 'fn', text: fr.length ? frameText(fr[0]) : '' }));
      var rest = fr.slice(1).map(function (f) { return names[f]; });
      tr.appendChild(el('td', { cls: 'path', title: fr.slice(1).map(frameText).join('\n'),
        text: rest.slice(0, 6).join(' \u2190 ') + (rest.length > 6 ? ' \u2190 \u2026' : '') }));
      t.appendChild(tr);
    });
    return t;
  }

  /* ---- flame graph (icicle: the root on top) ---- */
  var ROW = 18, MIN_PX = 0.5;

  function hue(name) {
    var h = 0;
    for (var k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) | 0;
    h = Math.abs(h);
    return 'hsl(' + (10 + h % 40) + ',' + (70 + h % 20) + '%,' + (62 + (h >> 5) % 14) + '%)';
  }

  function drawFlame() {
    var box = $('flame'), W = box.clientWidth || 1000, v = sums(view.key), all = v[0], out = [], deepest = 0;
    box.textContent = '';
    box.setAttribute('data-view', view.id);
    box.setAttribute('data-total', all);
    $('view-note').textContent = view.id === 'peak_space' && all !== D.peak.bytes ?
      'The heap as it stood the last time in-use rose by --peak-step: ' + amount(all, 'bytes') +
      ' of the exact peak, ' + amount(D.peak.bytes, 'bytes') + '.' : '';
    if (!(all > 0)) {
      box.style.height = '';
      box.appendChild(el('div', { cls: 'empty', text: 'No stack has any ' + view.label + '.' }));
      return;
    }
    if (!(v[zoom] > 0)) zoom = 0;
    function bar(n, x, w, anc) {
      var name = n ? names[frameOf[n]] : 'all';
      var d = el('div', { cls: 'fr' + (anc ? ' anc' : '') + (n && matchRe && matchRe.test(name) ? ' match' : ''), 'data-node': n });
      d.style.left = x.toFixed(1) + 'px';
      d.style.width = w.toFixed(1) + 'px';
      d.style.top = depth[n] * ROW + 'px';
      d.style.background = n ? hue(name) : '#ddd';
      if (w > 24) d.textContent = name;
      out.push(d);
      if (depth[n] > deepest) deepest = depth[n];
    }
    for (var a = parent[zoom], chain = []; zoom && a >= 0; a = parent[a]) chain.push(a);
    chain.forEach(function (n) { bar(n, 0, W, true); });
    (function rec(n, x, w) {
      bar(n, x, w, false);
      var cx = x;
      kids[n].forEach(function (c) {
        if (!(v[c] > 0)) return;
        var cw = v[c] / v[n] * w;
        if (cw >= MIN_PX) rec(c, cx, cw);
        cx += cw;
      });
    })(zoom, 0, W);
    var frag = document.createDocumentFragment();
    out.forEach(function (d) { frag.appendChild(d); });
    box.appendChild(frag);
    box.style.height = (deepest + 1) * ROW + 'px';
    box.setAttribute('data-zoom', zoom);
    box.setAttribute('data-frames', out.length);
    searchTotal();
  }

  /* How much of the view the frames matching the search hold (a match's subtree counted once). */
  function searchTotal() {
    var m = $('matched'), v = sums(view.key);
    if (!matchRe) { m.textContent = ''; m.removeAttribute('data-matched'); return; }
    var sum = 0, stack = [0];
    while (stack.length) {
      var n = stack.pop();
      if (n && matchRe.test(names[frameOf[n]])) { sum += v[n]; continue; }
      kids[n].forEach(function (c) { stack.push(c); });
    }
    m.setAttribute('data-matched', sum);
    m.textContent = 'matched: ' + amount(sum, view.unit) + ', ' + pct(sum, v[0]) + ' of ' + view.label;
  }

  function setSearch(text) {
    matchRe = null;
    if (text) {
      try { matchRe = new RegExp(text, 'i'); } catch (e) { matchRe = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i'); }
    }
    drawFlame();
  }

  function tooltip(ev) {
    var tip = $('tooltip'), d = ev.target.closest ? ev.target.closest('.fr') : null;
    if (!d) { tip.style.display = 'none'; return; }
    var n = +d.getAttribute('data-node'), v = sums(view.key), f = frameOf[n];
    tip.textContent = '';
    tip.appendChild(el('div', { text: n ? names[f] : 'all stacks' }));
    if (n && sites[f]) tip.appendChild(el('div', { cls: 'site', text: sites[f] }));
    tip.appendChild(el('div', { text: view.label + ': ' + amount(v[n], view.unit) + ', ' + pct(v[n], v[0]) + ' of all' +
      (zoom ? ', ' + pct(v[n], v[zoom]) + ' of the zoomed frame' : '') }));
    if (view.pair) tip.appendChild(el('div', { text: amount(sums(view.pair)[n], view.pair.indexOf('bytes') >= 0 ? 'bytes' : 'objects') }));
    tip.style.display = 'block';
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = ev.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight) y = ev.clientY - tip.offsetHeight - 10;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }

  function setView(v) {
    view = v;
    Array.prototype.forEach.call($('views').children, function (b) { b.className = b.getAttribute('data-view') === v.id ? 'on' : ''; });
    drawFlame();
    drawTop();
  }

  function controls() {
    VIEWS.forEach(function (v) {
      var b = el('button', { type: 'button', 'data-view': v.id, text: v.label });
      b.addEventListener('click', function () { setView(v); });
      $('views').appendChild(b);
    });
    $('search').addEventListener('input', function () { setSearch(this.value); });
    $('unzoom').addEventListener('click', function () { zoom = 0; drawFlame(); });
    var box = $('flame');
    box.addEventListener('click', function (ev) {
      var d = ev.target.closest('.fr');
      if (!d) return;
      var n = +d.getAttribute('data-node');
      zoom = n === zoom ? Math.max(parent[n], 0) : n;
      drawFlame();
    });
    box.addEventListener('mousemove', tooltip);
    box.addEventListener('mouseleave', function () { $('tooltip').style.display = 'none'; });
    var pending = 0;
    window.addEventListener('resize', function () { clearTimeout(pending); pending = setTimeout(drawFlame, 100); });
  }

  /* ---- top stacks of the view ---- */
  function drawTop() {
    var col = S[view.key], order = [];
    for (var s = 0; s < col.length; s++) if (col[s] > 0) order.push(s);
    order.sort(function (a, b) { return col[b] - col[a] || a - b; });
    var all = sums(view.key)[0], t = $('top');
    $('top-hint').textContent = 'by ' + view.label + ', the ' + Math.min(D.top, order.length) + ' largest of ' + order.length;
    t.className = 'stacks';
    t.textContent = '';
    t.setAttribute('data-view', view.id);
    var table = stackTable(order.slice(0, D.top).map(function (s) { return { s: s }; }), [
      { h: view.label, f: function (e) { return view.unit === 'bytes' ? bytes(col[e.s]) : group(col[e.s]); } },
      { h: '%', f: function (e) { return pct(col[e.s], all); } },
      { h: 'in use', f: function (e) { return bytes(S.inuse_bytes[e.s]) + ' / ' + group(S.inuse_objects[e.s]); } },
      { h: 'allocated', f: function (e) { return bytes(S.alloc_bytes[e.s]) + ' / ' + group(S.alloc_objects[e.s]); } },
      { h: 'temporary', f: function (e) { return group(S.temporary[e.s]); } }]);
    while (table.firstChild) t.appendChild(table.firstChild);
  }

  /* ---- histograms: log2 buckets ---- */
  function histogram(id, counts, label) {
    var box = $(id), lo = -1, hi = -1, max = 0, sum = 0;
    counts.forEach(function (c, k) { if (c > 0) { if (lo < 0) lo = k; hi = k; max = Math.max(max, c); sum += c; } });
    box.setAttribute('data-total', sum);
    if (lo < 0) { box.appendChild(el('div', { cls: 'empty', text: 'none recorded' })); return; }
    for (var k = lo; k <= hi; k++) {
      var bar = el('div', { cls: 'bar' });
      bar.style.width = (counts[k] / max * 300).toFixed(1) + 'px';
      box.appendChild(el('div', { cls: 'row', 'data-bucket': k, 'data-count': counts[k] },
        [el('span', { cls: 'label', text: label(k) }), bar, el('span', { cls: 'n', text: group(counts[k]) + ' (' + pct(counts[k], sum) + ')' })]));
    }
  }

  /* -i: growing and bounded stacks (docs/output-formats.md, "Growth"), the top ones' in-use over the snapshots. */
  function renderGrowth() {
    var G = D.growth, box = $('growth');
    if (!G || !G.rows.length) {
      box.appendChild(el('div', { cls: 'empty', text: 'No growth: take snapshots with -i to see which stacks keep growing.' }));
      return;
    }
    var W = 1000, H = 200, ml = 74, mr = 16, mt = 10, mb = 22, pw = W - ml - mr, ph = H - mt - mb;
    var n = G.t.length, t0 = G.t[0], span = Math.max(G.t[n - 1] - t0, 1e-3), top = 1, shown = G.rows.slice(0, 6);
    shown.forEach(function (r) { r.inuse.forEach(function (b) { if (b > top) top = b; }); });
    top = niceBytes(top);
    var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', id: 'growth-svg' });
    for (var g = 0; g <= 4; g++) {
      var gy = mt + ph - g / 4 * ph;
      svg('line', { x1: ml, x2: ml + pw, y1: gy, y2: gy, 'class': 'grid' }, s);
      svg('text', { x: ml - 4, y: gy + 3, 'text-anchor': 'end', 'class': 'axis' }, s).textContent = bytes(top * g / 4);
    }
    G.t.forEach(function (t) {
      svg('text', { x: ml + (t - t0) / span * pw, y: H - 6, 'text-anchor': 'middle', 'class': 'axis' }, s).textContent = secs(t);
    });
    var colors = ['#c0392b', '#2980b9', '#27ae60', '#8e44ad', '#d35400', '#16a085'];
    shown.forEach(function (r, j) {
      var pts = r.inuse.map(function (b, i) {
        return (ml + (G.t[i] - t0) / span * pw).toFixed(1) + ',' + (mt + ph - b / top * ph).toFixed(1);
      });
      var l = svg('polyline', { points: pts.join(' '), fill: 'none', stroke: colors[j % colors.length], 'stroke-width': 2,
        'stroke-dasharray': r.cls === 'growing' ? '' : '5,3', 'data-name': r.name }, s);
      svg('title', {}, l).textContent = r.name + ' (' + r.cls + ')';
    });
    box.appendChild(s);
    var tb = el('table', { id: 'growth-table' });
    tb.appendChild(el('tr', {}, [el('th', { text: 'class' }), el('th', { text: 'bytes/s' }), el('th', { text: 'in use' }),
      el('th', { text: 'stack' })]));
    G.rows.forEach(function (r, j) {
      var tr = el('tr', { 'data-class': r.cls, 'data-name': r.name, 'data-slope': r.slope }, [
        el('td', { text: r.cls }), el('td', { text: (r.slope > 0 ? '+' : '') + group(Math.round(r.slope)) }),
        el('td', { text: bytes(r.inuse[n - 1]) }), el('td', { text: r.name })]);
      if (j < shown.length) tr.style.borderLeft = '4px solid ' + colors[j % colors.length];
      tb.appendChild(tr);
    });
    box.appendChild(tb);
  }

  function usText(us) { return us >= 1e6 ? us / 1e6 + ' s' : us >= 1000 ? us / 1000 + ' ms' : us + ' \u00b5s'; }

  summary();
  renderChart();
  renderGrowth();
  controls();
  if (P.search) { $('search').value = P.search; matchRe = null; }
  if (P.zoom && +P.zoom > 0 && +P.zoom < N) zoom = +P.zoom;
  /* #cycle: every view in turn through its button, each one's total kept (a check that switching works). */
  if ('cycle' in P) {
    var first = view, seen = [];
    VIEWS.forEach(function (v) {
      document.querySelector('#views button[data-view="' + v.id + '"]').click();
      seen.push(v.id + '=' + $('flame').getAttribute('data-total'));
    });
    $('flame').setAttribute('data-cycle', seen.join(' '));
    view = first;
  }
  setView(view);
  if (P.search) setSearch(P.search);
  if (P.select) {
    var t01 = P.select.split(',').map(Number);
    if (t01.length === 2 && !isNaN(t01[0]) && !isNaN(t01[1])) select(Math.min(t01[0], t01[1]), Math.max(t01[0], t01[1]));
  }
  histogram('sizes', D.sizes, function (k) { return k ? '\u2265 ' + bytes(Math.pow(2, k)) : '0-1 B'; });
  histogram('lifetimes', D.lifetimes, function (k) { return k ? '\u2265 ' + usText(Math.pow(2, k)) : '< 2 \u00b5s'; });
  document.body.setAttribute('data-ready', '1');
})();
