from collections import Counter

from toolsense.catalog import load_demo_queries
from toolsense.catalog.tool import loose_key


def test_demo_catalog_shape(demo_catalog):
    assert 100 <= len(demo_catalog) <= 150
    services = demo_catalog.services()
    assert len(services) >= 15
    assert not demo_catalog.near_duplicates()
    assert len({loose_key(n) for n in demo_catalog.names}) == len(demo_catalog)
    assert all(t.api_description and t.tool_description for t in demo_catalog)


def test_demo_queries_cover_every_tool(demo_catalog):
    qs = load_demo_queries()
    assert all(n in demo_catalog for q in qs for n in q.tools)
    single = [q for q in qs if len(q.tools) == 1]
    verbose = Counter(q.tools[0] for q in single if q.style == "verbose")
    short = Counter(q.tools[0] for q in single if q.style == "short")
    assert all(verbose[n] >= 2 and short[n] >= 1 for n in demo_catalog.names)
    multi = [q for q in qs if len(q.tools) > 1]
    assert multi and max(len(q.tools) for q in multi) <= 4
    train, test = load_demo_queries(split="train"), load_demo_queries(split="test")
    assert len(train) + len(test) == len(qs)
    assert {n for q in train for n in q.tools} == set(demo_catalog.names)
    assert {q.style for q in test} == {"verbose", "short"} and any(len(q.tools) > 1 for q in test)
    assert not {q.text for q in train} & {q.text for q in test}


def test_overlapping_services_give_hard_negatives(demo_catalog):
    from toolsense.models.encoders import load_encoder

    # by what the API does (the service text is shared by all of a service's APIs)
    emb = load_encoder(None).encode([t.api_description for t in demo_catalog], normalize_embeddings=True)
    sim = emb @ emb.T
    names = demo_catalog.names
    cross = 0
    for i, t in enumerate(demo_catalog):
        sim[i, i] = -1
        j = int(sim[i].argmax())
        cross += demo_catalog[names[j]].service != t.service
    assert cross >= 25  # many tools' nearest neighbour belongs to another service


def test_appendix_e_short_split_covers_every_tool_and_no_test_query(demo_catalog):
    """App. E trains TG on short (realistic-style) queries: conf/stage2/demo_short.yaml's split
    must cover the same tools as the verbose split TG trains on (all 126), and share no query
    (normalised text) nor a near copy (token Jaccard >= 0.6) with any test item."""
    from omegaconf import OmegaConf

    from tests.training.conftest import ROOT
    from toolsense.data.leakage import normalise_query
    from toolsense.data.sources import QuerySource, load_queries

    raw = OmegaConf.to_container(OmegaConf.load(ROOT / "toolsense" / "conf" / "stage2" / "demo_short.yaml"))
    short = load_queries([QuerySource(**s) for s in raw["sources"]])
    verbose = load_demo_queries(split="train", style="verbose")
    assert {q.style for q in short} == {"short"} and {q.split for q in short} == {"train"}
    assert {n for q in short for n in q.tools} == {n for q in verbose for n in q.tools} == set(demo_catalog.names)
    assert len(short) == 101 + 31 and len({q.query_id for q in short}) == len(short)
    test = load_demo_queries(split="test")
    test_words = [set(normalise_query(q.text).split()) for q in test]
    assert not {normalise_query(q.text) for q in short} & {normalise_query(q.text) for q in test}
    for q in short:
        words = set(normalise_query(q.text).split())
        assert max(len(words & t) / len(words | t) for t in test_words) < 0.6, q.text
