from rlhelper.search.fusion import boost, reciprocal_rank_fusion


def test_rrf_rewards_agreement_between_rankings():
    fused = reciprocal_rank_fusion([[1, 2, 3], [2, 3, 1]])
    assert [doc for doc, _ in fused] == [2, 1, 3]


def test_rrf_scores_follow_the_formula():
    fused = dict(reciprocal_rank_fusion([[7, 8]], k=60))
    assert fused[7] == 1 / 61 and fused[8] == 1 / 62


def test_rrf_weights_change_the_winner():
    lexical, dense = [1, 2], [2, 1]
    assert reciprocal_rank_fusion([lexical, dense], weights=[2.0, 1.0])[0][0] == 1
    assert reciprocal_rank_fusion([lexical, dense], weights=[1.0, 2.0])[0][0] == 2


def test_rrf_keeps_ids_seen_by_one_retriever_only_and_is_deterministic():
    fused = reciprocal_rank_fusion([[1], [2]])
    assert [doc for doc, _ in fused] == [1, 2]  # tie: first appearance wins


def test_boost_prefers_hinted_entry_among_near_ties_only():
    fused = [(1, 0.0330), (2, 0.0325), (3, 0.0100)]
    assert [d for d, _ in boost(fused, {2: 1.25})][:2] == [2, 1]
    # a clearly better match from another framework stays on top
    assert boost(fused, {3: 1.25})[0][0] == 1
