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

# role_keys: a key per role in $K ($K/<role>, comment "<role>-key").
role_keys() {
	local r
	for r in admin coordinator executor reviewer system; do
		ssh-keygen -q -t ed25519 -N '' -C "$r-key" -f "$K/$r"
	done
}

# signing_setup: the work repository, payloads, a key per role (role_keys)
# and an empty SSOT repository to cd into.
signing_setup() {
	signing_base
	role_keys
	SSOT=$BATS_TEST_TMPDIR/ssot
	git init -q "$SSOT"
	cd "$SSOT" || return 1
}

# role_signers: $K/signers, the allowed-signers file, grants each role its
# own key.
role_signers() {
	local r
	for r in admin coordinator executor reviewer system; do
		printf '%s %s\n' "$r" "$(cut -d' ' -f1,2 "$K/$r.pub")" >> "$K/signers"
	done
}

# as KEY: the next commands sign with $K/KEY (a role's key, or another).
as() {
	git -C "$SSOT" config amp.signingKey "$K/$1"
}

# strict_hub DIR: a bare hub with amp's server hook in strict mode, whose
# own key (for its join) is the system's.
strict_hub() {
	git init -q --bare "$1"
	git -C "$1" config amp.requireSigned true
	git -C "$1" config amp.allowedSigners "$K/signers"
	git -C "$1" config amp.signingKey "$K/system"
	amp hook install --server --repo "$1" > /dev/null
}

# strict_clone URL NAME KEY: a clone in strict mode writing with $K/KEY.
strict_clone() {
	git clone -q "$1" "$2" 2> /dev/null
	git -C "$2" config amp.allowedSigners "$K/signers"
	git -C "$2" config amp.requireSigned true
	git -C "$2" config amp.signingKey "$K/$3"
}
