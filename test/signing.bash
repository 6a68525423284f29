# shellcheck shell=bash
# Keys and an SSOT for the signing suites (87, 30): throw-away ed25519 keys
# made with ssh-keygen, one per role, in $K; the SSOT at $SSOT, the current
# directory.  No AMP_NOW: strict mode refuses it.  Load after helpers.

# signing_base: the work repository the dispatches name, payloads, no
# AMP_NOW, a global identity, and $K, the folder of the keys.
signing_base() {
	make_repo
	write_payloads
	unset AMP_NOW
	git config --global user.name tester
	git config --global user.email tester@example.invalid
	K=$BATS_TEST_TMPDIR/keys
	mkdir -p "$K"
}

# signing_setup: the work repository, payloads, a key per role ($K/<role>,
# comment "<role>-key") and an empty SSOT repository to cd into.
signing_setup() {
	signing_base
	local r
	for r in admin coordinator executor reviewer system; do
		ssh-keygen -q -t ed25519 -N '' -C "$r-key" -f "$K/$r"
	done
	SSOT=$BATS_TEST_TMPDIR/ssot
	git init -q "$SSOT"
	cd "$SSOT" || return 1
}

# as KEY: the next commands sign with $K/KEY (a role's key, or another).
as() {
	git -C "$SSOT" config amp.signingKey "$K/$1"
}
