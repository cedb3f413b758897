"""check_positions inside a training pipeline: a data collator wrapped so that every batch it makes has its
position ids checked against the family's rule before the model sees it."""
import logging

from ._lib import whole
from .rope import check_positions

_log = logging.getLogger("ropescope")


class PositionMismatch(AssertionError):
    """A batch's position ids differ from the family's rule; `report` is the batch's CheckReport."""

    def __init__(self, report):
        super().__init__(str(report))
        self.report = report


class CheckedCollator:
    """Wraps `collator` (any callable from features to a dict batch, e.g. a Hugging Face data collator).

    Each batch's position_ids (and rope_deltas, when the batch has them) are checked with check_positions
    against `family` (and `config`, as rope_index takes them). gemma3 and gemma4 batches hold [B, L] position_ids;
    a packed one (transformers' DataCollatorWithFlattening: positions that restart at 0, no attention_mask) is
    checked sequence by sequence. On the first differing batch it raises
    PositionMismatch (on_mismatch="raise"), or logs the report once to the "ropescope" logger ("log"), or calls
    on_mismatch(report). A batch without position_ids (the model computes its own) passes unchecked, unless
    require=True. `every`: check one batch in that many (1: all).
    """

    def __init__(self, collator, family, *, config=None, on_mismatch="raise", require=False, every=1, **rule):
        if on_mismatch not in ("raise", "log") and not callable(on_mismatch):
            raise ValueError("on_mismatch: expected 'raise', 'log' or a callable")
        self.collator = collator
        self.family = family
        self.config = config
        self.on_mismatch = on_mismatch
        self.require = require
        # 0 or a negative count would silently check nothing (or every batch): refused, as a count must be.
        self.every = whole("every", every, 1)
        self.rule = rule
        self.batches = 0
        self.mismatches = 0

    def __call__(self, features):
        batch = self.collator(features)
        self.batches += 1
        if (self.batches - 1) % self.every:
            return batch
        get = batch.get if hasattr(batch, "get") else lambda k: getattr(batch, k, None)
        if get("position_ids") is None:
            if self.require:
                raise KeyError("position_ids: the collator's batch has none to check")
            return batch
        report = check_positions(get("position_ids"), get("input_ids"), self.family, image_grid_thw=get("image_grid_thw"),
                                 video_grid_thw=get("video_grid_thw"), mm_token_type_ids=get("mm_token_type_ids"),
                                 attention_mask=get("attention_mask"), second_per_grid_ts=get("second_per_grid_ts"),
                                 rope_deltas=get("rope_deltas"), config=self.config, **self.rule)
        if not report.ok:
            self.mismatches += 1
            if self.on_mismatch == "raise":
                raise PositionMismatch(report)
            if self.on_mismatch == "log":
                if self.mismatches == 1:
                    _log.warning("position ids differ from the rule (batch %d):\n%s", self.batches, report)
            else:
                self.on_mismatch(report)
        return batch
