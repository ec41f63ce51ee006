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
.opts li.right{background:#dcfce7}.opts li.picked{outline:2px solid #2563eb}
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
    const head = '<div class="head">' + esc(s.bench) + ' · ' + esc(s.system) + ' · tier ' + esc(s.tier) + ' · ' + esc(s.id) + '</div>';
    if (s.kind === 'retrieval') {
      return '<div class="' + cls + '" data-id="' + esc(s.id) + '">' + head + '<div class="q">' + esc(s.query) + '</div>' +
        '<div>gold: ' + s.gold.map(g => '<span class="gold">' + esc(g) + '</span>').join(', ') + '</div>' +
        '<div class="beams">' + beams('constrained', s.constrained, s.gold) + beams('free-form', s.free, s.gold) + '</div></div>';
    }
    const opts = s.options.map((o, i) => '<li class="' + (s.letters[i] === s.gold ? 'right ' : '') +
      (s.letters[i] === s.pred ? 'picked' : '') + '">' + esc(s.letters[i]) + '. ' + esc(o) + '</li>').join('');
    return '<div class="' + cls + '" data-id="' + esc(s.id) + '">' + head + '<div class="q">' + esc(s.tool) + ': ' + esc(s.query) + '</div>' +
      '<div>answer ' + esc(s.pred) + ', gold ' + esc(s.gold) + ' (option order ' + esc(s.order) + ')</div><ol class="opts" type="A">' + opts + '</ol></div>';
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
