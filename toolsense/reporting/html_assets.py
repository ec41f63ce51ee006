"""The stylesheet and script inlined into every ``report.html`` (html_report.py). Kept apart so the
report builder stays readable; nothing here is fetched: the page works from a file, offline."""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.meta{color:#5b6577;font-size:12px}table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #dde2ea;padding:3px 7px;text-align:right;white-space:nowrap}th{background:#f3f5f9}
td.l,th.l{text-align:left}.wide{overflow-x:auto;max-width:100%}.ci{color:#7b8494;font-size:11px}.flag{color:#b45309;font-weight:600}
.plots{display:flex;flex-wrap:wrap;gap:16px}.plots figure{margin:0}.plots figcaption{font-size:12px;color:#5b6577}
#filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0;font-size:13px}
#filters input{width:260px;padding:3px 6px}.sample{border:1px solid #dde2ea;border-radius:6px;padding:8px 10px;margin:8px 0}
.sample.hit{border-left:5px solid #15803d}.sample.miss{border-left:5px solid #b91c1c}
.sample .head{font-size:12px;color:#5b6577}.sample .q{font-size:14px;margin:3px 0 6px}
.beams{display:flex;gap:18px;flex-wrap:wrap}.beams ol{margin:2px 0;padding-left:24px;font-size:12px}
.gold{background:#dcfce7;font-weight:600}.invalid{color:#b91c1c;font-style:italic}.score{color:#7b8494}
.opts{list-style:none;padding-left:8px}.opts li.right{background:#dcfce7}.opts li.picked{outline:2px solid #2563eb}
td .ci,td .sd{display:block}.tables{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
table.config caption{text-align:left;font-weight:600;padding:2px 0}table.config td.l{max-width:260px;white-space:normal}
.letter{display:inline-block;min-width:14px;font-weight:700;color:#2563eb}.sig{color:#2563eb;font-weight:700}
.badge{background:#fef3c7;color:#92400e;border-radius:4px;padding:0 4px;font-size:11px}td.one-seed{background:#fffbeb}
.legend{font-size:12px;color:#3d4555;max-width:1300px}.plots img{max-width:640px;height:auto;border:1px solid #dde2ea}
.side{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:10px}.side>div{min-width:0}
.side .sys{font-weight:600;font-size:12px;overflow-wrap:anywhere}\
.side ol{margin:2px 0;padding-left:22px;font-size:12px;overflow-wrap:anywhere}
.item{border:1px solid #dde2ea;border-radius:6px;padding:8px 10px;margin:8px 0}.right{color:#15803d}.wrong{color:#b91c1c}
table.config th{white-space:normal}table.config td.l,.meta,.legend,.plots figcaption{overflow-wrap:anywhere}
#filters select{max-width:340px}
"""

JS = r"""
(function(){
  const data = JSON.parse(document.getElementById('samples-data').textContent);
  const box = document.getElementById('samples'), shown = document.getElementById('shown');
  const f = {q: document.getElementById('f-q'), bench: document.getElementById('f-bench'),
             tier: document.getElementById('f-tier'), outcome: document.getElementById('f-outcome'),
             k: document.getElementById('f-k')};
  const esc = s => String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
  function isHit(s, k){ return s.kind === 'retrieval' ? s.hits[k] === 1 : s.correct; }
  function beams(title, list, gold){
    if (!list) return '';
    const li = list.map(b => b.tool === null
      ? '<li class="invalid">invalid: ' + esc(b.text || '') + ' <span class="score">' + b.score + '</span></li>'
      : '<li' + (gold.includes(b.tool) ? ' class="gold"' : '') + '>' + esc(b.tool) + ' <span class="score">' + b.score + '</span></li>');
    return '<div><b>' + title + '</b><ol>' + li.join('') + '</ol></div>';
  }
  function card(s, k){
    const cls = 'sample ' + (isHit(s, k) ? 'hit' : 'miss');
    const head = '<div class="head">' + esc(s.bench) + ' · ' + esc(s.label || s.system) + ' · tier ' + esc(s.tier) + ' · ' +
      esc(s.id) + '</div>';
    if (s.kind === 'retrieval') {
      return '<div class="' + cls + '" data-id="' + esc(s.id) + '">' + head + '<div class="q">' + esc(s.query) + '</div>' +
        '<div>gold: ' + s.gold.map(g => '<span class="gold">' + esc(g) + '</span>').join(', ') + '</div>' +
        '<div class="beams">' + beams('constrained', s.constrained, s.gold) + beams('free-form', s.free, s.gold) + '</div></div>';
    }
    const opts = s.options.map((o, i) => '<li class="' + (s.letters[i] === s.gold ? 'right ' : '') +
      (s.letters[i] === s.pred ? 'picked' : '') + '">' + esc(s.letters[i]) + '. ' + esc(o) + '</li>').join('');
    return '<div class="' + cls + '" data-id="' + esc(s.id) + '">' + head +
      '<div class="q">' + esc(s.tool) + ': ' + esc(s.query) + '</div>' +
      '<div>answer ' + esc(s.pred) + ', gold ' + esc(s.gold) + ' (option order ' + esc(s.order) + ')</div>' +
      '<ul class="opts">' + opts + '</ul></div>';
  }
  function render(){
    const q = f.q.value.trim().toLowerCase(), k = f.k.value;
    const keep = data.filter(s => (!f.bench.value || s.bench === f.bench.value) && (!f.tier.value || s.tier === f.tier.value) &&
      (!f.outcome.value || (f.outcome.value === 'hit') === isHit(s, k)) && (!q || s.text.includes(q)));
    box.innerHTML = keep.map(s => card(s, k)).join('');
    shown.textContent = keep.length;
    history.replaceState(null, '', '#' + new URLSearchParams(Object.entries(
      {q: f.q.value, bench: f.bench.value, tier: f.tier.value, outcome: f.outcome.value, k: k}).filter(e => e[1])).toString());
  }
  const init = new URLSearchParams(location.hash.slice(1));
  for (const [name, el] of Object.entries(f)) { if (init.has(name)) el.value = init.get(name); el.addEventListener('input', render); }
  render();
  document.body.dataset.ready = '1';
})();
"""

COMPARE_JS = r"""
(function(){
  const data = JSON.parse(document.getElementById('query-data').textContent);
  const box = document.getElementById('queries'), shown = document.getElementById('shown');
  const ids = ['q', 'bench', 'tier', 'mode', 'a', 'b', 'outcome', 'k'];
  const f = Object.fromEntries(ids.map(n => [n, document.getElementById('f-' + n)]));
  const esc = s => String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
  const hits = (it, sys, k) => { const e = it.sys[sys]; return e ? e.hits[k] : null; };
  const right = (it, sys, k) => { const h = hits(it, sys, k); return h !== null && h.length > 0 && h.every(x => x === 1); };
  const wrong = (it, sys, k) => { const h = hits(it, sys, k); return h !== null && h.every(x => x === 0); };
  const gold = it => Array.isArray(it.gold) ? it.gold : [it.gold];
  function outcome(it, k){
    const a = f.a.value, b = f.b.value;
    switch (f.outcome.value) {
      case 'A right, B wrong': return right(it, a, k) && wrong(it, b, k);
      case 'A wrong, B right': return wrong(it, a, k) && right(it, b, k);
      case 'both right': return right(it, a, k) && right(it, b, k);
      case 'both wrong': return wrong(it, a, k) && wrong(it, b, k);
      default: return true;
    }
  }
  function column(it, sys, k){
    const e = it.sys[sys];
    if (!e) return '<div><div class="sys">' + esc(sys) + '</div><i>not evaluated</i></div>';
    const h = e.hits[k], n = h.filter(x => x === 1).length;
    const cls = n === h.length ? 'right' : (n === 0 ? 'wrong' : '');
    const top = (it.kind === 'retrieval' ? e.top.slice(0, Number(k)) : e.top).map(t => t === null
      ? '<li class="invalid">invalid</li>' : '<li' + (gold(it).includes(t) ? ' class="gold"' : '') + '>' + esc(t) + '</li>');
    return '<div data-sys="' + esc(sys) + '"><div class="sys">' + esc(sys) + '</div><div class="' + cls + '">hit in ' + n + ' of ' +
      h.length + ' seed' + (h.length === 1 ? '' : 's') + ' (' + esc(e.run) + ')</div><ol>' + top.join('') + '</ol></div>';
  }
  function card(it, k){
    const order = [f.a.value, f.b.value, ...data.systems.filter(s => s !== f.a.value && s !== f.b.value)];
    return '<div class="item" data-id="' + esc(it.id) + '" data-bench="' + esc(it.bench) + '" data-mode="' + esc(it.mode) +
      '"><div class="head meta">' + esc(it.bench) + (it.mode ? ' · ' + esc(it.mode) + ' mode' : '') +
      ' · tier ' + esc(it.tier) + ' · ' + esc(it.id) + '</div><div class="q">' + (it.tool ? esc(it.tool) + ': ' : '') + esc(it.query) +
      '</div><div>gold: ' + gold(it).map(g => '<span class="gold">' + esc(g) + '</span>').join(', ') + '</div><div class="side">' +
      order.filter((s, i) => order.indexOf(s) === i).map(s => column(it, s, k)).join('') + '</div></div>';
  }
  function render(){
    const q = f.q.value.trim().toLowerCase(), k = f.k.value;
    const keep = data.items.filter(it => (!f.bench.value || it.bench === f.bench.value) &&
      (!f.tier.value || String(it.tier) === f.tier.value) && (!f.mode.value || it.mode === f.mode.value) &&
      outcome(it, k) && (!q || (it.query + ' ' + it.id + ' ' + gold(it).join(' ') + ' ' + (it.tool || '')).toLowerCase().includes(q)));
    box.innerHTML = keep.slice(0, data.max).map(it => card(it, k)).join('');
    shown.textContent = keep.length;
    history.replaceState(null, '', '#' + new URLSearchParams(Object.entries(
      Object.fromEntries(ids.map(n => [n, f[n].value]))).filter(e => e[1])).toString());
  }
  const init = new URLSearchParams(location.hash.slice(1));
  for (const [name, el] of Object.entries(f)) { if (init.has(name)) el.value = init.get(name); el.addEventListener('input', render); }
  render();
  document.body.dataset.scrollWidth = document.documentElement.scrollWidth;  // the widest table, for the 1,400 px check
  document.body.dataset.ready = '1';
})();
"""
