"""The abstention model: logistic fit, stored per embedder, the user's file before the shipped one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlhelper.search import confidence
from rlhelper.search.confidence import FEATURES, ConfidenceModel, Signals, fit_logistic


def _model(bias: float, embedder: str = "usem3", threshold: float = 0.5) -> ConfidenceModel:
    return ConfidenceModel(weights=[1.0, 0.0, 0.0, 0.0, 0.0], bias=bias, thresholds={"hybrid": threshold},
                           embedder=embedder)


def test_fit_separates_separable_classes_and_weighs_the_informative_signal():
    rng = np.random.default_rng(0)
    pos = np.column_stack([rng.uniform(0.5, 0.9, 60), rng.uniform(0, 1, 60), rng.uniform(0, 1, 60),
                           rng.uniform(0, 1, 60)])
    neg = np.column_stack([rng.uniform(0.0, 0.4, 200), rng.uniform(0, 1, 200), rng.uniform(0, 1, 200),
                           rng.uniform(0, 1, 200)])
    weights, bias = fit_logistic(pos, neg, l2=0.01)
    scores = lambda x: x @ weights + bias  # noqa: E731
    assert scores(pos).min() > scores(neg).max()
    assert abs(weights[0]) > 5 * max(abs(w) for w in weights[1:])  # only the first column carries the label


def test_fit_is_class_balanced():
    """Many more negatives than positives must not push every prediction negative."""
    pos = np.array([[0.6, 0, 0, 0], [0.7, 0, 0, 0]])
    neg = np.array([[0.3, 0, 0, 0]] * 200 + [[0.65, 0, 0, 0]] * 5)
    weights, bias = fit_logistic(pos, neg)
    assert (pos @ weights + bias).min() > 0  # both positives on the positive side
    assert (neg[:200] @ weights + bias).max() < 0


def test_fit_refuses_a_missing_class():
    with pytest.raises(ValueError):
        fit_logistic(np.zeros((3, 4)), np.zeros((0, 4)))


def test_confidence_is_a_probability_that_grows_with_the_signals():
    model = ConfidenceModel(weights=[2.0, 1.0, 3.0, 1.0, 0.5], bias=-3.0, thresholds={"hybrid": 0.4})
    low = model.confidence(Signals(cosine=0.1, margin=0.0, lexical_match=0.1, coverage=0.1, length=1.0))
    high = model.confidence(Signals(cosine=0.8, margin=0.2, lexical_match=0.9, coverage=0.9, length=1.0))
    assert 0.0 < low < 0.4 < high < 1.0
    assert model.threshold("dense") == 0.4  # a mode without its own threshold uses hybrid's


def test_round_trip_through_a_file_keeps_other_embedders(tmp_path):
    path = tmp_path / "calibration.json"
    confidence.save_model(_model(-1.0, "usem3"), path)
    confidence.save_model(_model(-2.0, "st:other"), path)
    models = json.loads(path.read_text())["models"]
    assert set(models) == {"usem3", "st:other"} and models["usem3"]["features"] == list(FEATURES)
    assert ConfidenceModel.from_dict(models["st:other"]).bias == -2.0


def test_the_users_calibration_wins_over_the_shipped_one(tmp_path, monkeypatch):
    shipped = confidence.model_for("usem3")
    assert shipped.embedder == "usem3" and set(shipped.thresholds) >= {"hybrid"}
    user = tmp_path / "mine.json"
    monkeypatch.setenv("RLHELPER_CALIBRATION_FILE", str(user))
    confidence.save_model(_model(-9.0, "usem3"), user)
    assert confidence.model_for("usem3").bias == -9.0


def test_an_uncalibrated_embedder_gets_the_default_embedders_model(tmp_path, monkeypatch):
    monkeypatch.setenv("RLHELPER_CALIBRATION_FILE", str(tmp_path / "none.json"))
    assert confidence.model_for("sentence-transformers:some/model").weights == confidence.model_for("usem3").weights


def test_a_damaged_user_file_falls_back_to_the_shipped_model(tmp_path, monkeypatch):
    bad = tmp_path / "calibration.json"
    bad.write_text('{"models": {"usem3": {"features": ["cosine"], "weights": [1]}}}')
    monkeypatch.setenv("RLHELPER_CALIBRATION_FILE", str(bad))
    model = confidence.model_for("usem3")
    assert model.weights != [1] and len(model.weights) == len(FEATURES)


def test_a_user_file_fitted_before_the_length_signal_falls_back_to_the_shipped_model(tmp_path, monkeypatch):
    old = _model(-9.0, "usem3").to_dict()
    old["features"], old["weights"] = list(FEATURES[:4]), old["weights"][:4]  # as written before `length`
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"models": {"usem3": old}}))
    monkeypatch.setenv("RLHELPER_CALIBRATION_FILE", str(path))
    model = confidence.model_for("usem3")
    assert model.bias != -9.0 and len(model.weights) == len(FEATURES) == 5


def test_longer_queries_need_less_lexical_evidence_in_the_shipped_model():
    # The length signal compensates the lexical ones, which shrink as a query grows.
    model = confidence.model_for("usem3")
    assert model.weights[FEATURES.index("length")] > 0
    short = Signals(cosine=0.4, margin=0.05, lexical_match=0.2, coverage=0.2, length=1.0)
    long = Signals(cosine=0.4, margin=0.05, lexical_match=0.2, coverage=0.2, length=3.0)
    assert model.confidence(long) > model.confidence(short)


def test_the_shipped_calibration_is_valid_and_records_how_it_was_fitted():
    data = json.loads(confidence.PACKAGED_FILE.read_text(encoding="utf-8"))
    model = ConfidenceModel.from_dict(data["models"]["usem3"])
    assert set(model.thresholds) == {"lexical", "dense", "hybrid", "judge"}  # judge: `rlhelper judge calibrate`
    assert all(0.0 < t < 1.0 for t in model.thresholds.values())
    assert "dev" in model.notes["fitted_on"] and "near misses" in model.notes["fitted_on"]
    # Every mode has a weak-match band above its threshold.
    assert all(model.thresholds[m] <= model.weak_ceilings[m] < 1.0 for m in model.thresholds)


def test_weak_match_band_survives_a_round_trip_and_has_a_closed_top():
    model = ConfidenceModel(weights=[1.0, 0, 0, 0, 0], bias=0.0, thresholds={"hybrid": 0.3},
                            weak_ceilings={"hybrid": 0.6, "dense": 0.5})
    again = ConfidenceModel.from_dict(model.to_dict())
    assert again.weak_ceilings == {"hybrid": 0.6, "dense": 0.5}
    assert again.weak(0.6, "hybrid") and not again.weak(0.6000001, "hybrid")
    assert again.weak(0.55, "lexical")  # a mode without its own ceiling uses hybrid's
    assert not again.weak(0.55, "dense")


def test_a_model_without_weak_ceilings_flags_nothing():
    data = ConfidenceModel(weights=[1.0, 0, 0, 0, 0], bias=0.0, thresholds={"hybrid": 0.3}).to_dict()
    del data["weak_ceilings"]  # a calibration file written before the band existed
    assert not ConfidenceModel.from_dict(data).weak(0.31, "hybrid")


def test_the_cosine_floor_vetoes_unless_the_query_names_the_heading():
    model = ConfidenceModel(weights=[0.0, 0.0, 5.0, 0.0, 0.0], bias=-1.0, thresholds={"hybrid": 0.5}, cosine_floor=0.2)
    strong_words = dict(margin=0.0, lexical_match=0.9, coverage=1.0)
    assert model.confidence(Signals(cosine=0.05, heading_coverage=0.0, **strong_words)) == 0.0  # "hello"
    assert model.confidence(Signals(cosine=0.05, heading_coverage=1.0, **strong_words)) > 0.9  # "oom"
    assert model.confidence(Signals(cosine=0.30, heading_coverage=0.0, **strong_words)) > 0.9


def test_inputs_are_clipped_to_the_range_the_model_was_fitted_on():
    # A linear model must not extrapolate: a 500-token log is no surer than the longest dev question.
    ranges = [[0.0, 1.0], [0.0, 0.4], [0.0, 1.0], [0.0, 1.0], [1.0, 5.0]]
    model = ConfidenceModel(weights=[0.0, 0.0, 0.0, 0.0, 1.0], bias=-5.0, thresholds={"hybrid": 0.5},
                            feature_ranges=ranges)
    signals = dict(cosine=0.4, margin=0.1, lexical_match=0.3, coverage=0.3)
    at_the_edge = model.confidence(Signals(length=5.0, **signals))
    assert model.confidence(Signals(length=9.0, **signals)) == at_the_edge == 0.5
    again = ConfidenceModel.from_dict(model.to_dict())
    assert again.feature_ranges == ranges and again.confidence(Signals(length=9.0, **signals)) == 0.5
    unclipped = ConfidenceModel(weights=model.weights, bias=-5.0, thresholds={"hybrid": 0.5})
    assert unclipped.confidence(Signals(length=9.0, **signals)) > 0.9  # what clipping prevents
    assert "feature_ranges" not in unclipped.to_dict()


def test_the_shipped_model_records_the_ranges_it_was_fitted_on():
    model = confidence.model_for("usem3")
    assert model.feature_ranges is not None and len(model.feature_ranges) == len(FEATURES)
    assert all(low <= high for low, high in model.feature_ranges)
