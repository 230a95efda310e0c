"""The table of defaults (issue 40, item 5): one row per default that chooses how a job runs, each agreeing
with the field table and citing its source."""

from mlsysim.engine.inputs.defaults import DEFAULTS
from mlsysim.engine.inputs.fields import FIELDS
from mlsysim.engine.model.equations import FUSED_ATTENTION_DEFAULT


def test_every_row_is_a_field_at_its_default_with_a_source():
    assert len({d.field for d in DEFAULTS}) == len(DEFAULTS)
    for d in DEFAULTS:
        f = FIELDS[d.field]
        assert d.taken(f.default), d.field  # the field's own default is the row's
        assert d.taken(f.from_text(d.value)), d.field  # and so is the value as typed
        assert len(d.source) > 20 and d.meaning, d.field


def test_fused_attention_is_the_models_default():
    row = next(d for d in DEFAULTS if d.field == "flash_attention")
    assert float(row.value) == FUSED_ATTENTION_DEFAULT == 1.0
    assert not row.taken(0)
