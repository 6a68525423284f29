# fastimport.bash - amp import beside git fast-import of the same records
# (35-import.bats, 35-gc.bats).

# import_and_fast_import N: N records of real traffic, imported by amp into
# this SSOT and by git fast-import (gen-traffic's stream, in the layout
# the SSOT is in) into a copy of it ($BATS_TEST_TMPDIR/fi).
import_and_fast_import() {
	local layout
	layout=$(ssot_layout)
	rm -rf "$BATS_TEST_TMPDIR/fi" && cp -a . "$BATS_TEST_TMPDIR/fi"
	AMP_GEN_LAYOUT=$layout $PY "$BATS_TEST_DIRNAME/../share/gen-traffic.py" "$1" \
		"$BATS_TEST_TMPDIR/l.jsonl" "$BATS_TEST_TMPDIR/s.fi" "$(git rev-parse refs/amp/messages)"
	git -C "$BATS_TEST_TMPDIR/fi" fast-import --quiet < "$BATS_TEST_TMPDIR/s.fi"
	run amp import "$BATS_TEST_TMPDIR/l.jsonl"
	assert_success
	# gen-traffic writes whole tasks: N records or a few more
	[ "$(wc -l < "$BATS_TEST_TMPDIR/l.jsonl")" -ge "$1" ]
	assert_output --partial "imported $(wc -l < "$BATS_TEST_TMPDIR/l.jsonl") records"
}
