/*
 * sshsig.c - SSH signatures of Ed25519 keys in process (sshsig.h): the
 * wire format of OpenSSH's PROTOCOL.sshsig and PROTOCOL.key, the
 * allowed-signers format of ssh-keygen(1), and nettle's Ed25519.
 *
 * Every byte read here comes from outside (a pushed signature, a key
 * file, the allowed-signers file): each length is checked against what is
 * left before it is used, and whatever is not exactly the form ssh-keygen
 * writes is left to ssh-keygen (sign.c falls back to it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nettle/base64.h>
#include <nettle/eddsa.h>
#include <nettle/sha2.h>

#include "sshsig.h"

#define KEY_TYPE "ssh-ed25519"
#define SIG_BEGIN "-----BEGIN SSH SIGNATURE-----\n"
#define SIG_END "-----END SSH SIGNATURE-----"
#define KEY_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define KEY_END "-----END OPENSSH PRIVATE KEY-----"
#define KEY_MAGIC "openssh-key-v1" /* and its NUL */
/* PROTOCOL.sshsig: MAGIC_PREAMBLE, SIG_VERSION, the hash ssh-keygen uses. */
#define MAGIC "SSHSIG"
#define SIG_VERSION 1
#define HASH_ALG "sha512"
/* A key file or an allowed-signers file larger than this is not read here. */
#define KEYFILE_MAX 16384
#define SIGNERS_MAX (4L << 20)
/* The public key blob: string "ssh-ed25519", string pk[32]. */
#define PUBBLOB_LEN (4 + 11 + 4 + ED25519_KEY_SIZE)

/* ---- the wire format (RFC 4251 strings and uint32s) ------------------------ */

typedef struct rd {
	const uint8_t *p;
	size_t n;
} rd;

static int get_u32(rd *r, uint32_t *v)
{
	if (r->n < 4)
		return -1;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->n -= 4;
	return 0;
}

/* A string: its bytes stay in the buffer (*s, *len); bounded by what is left. */
static int get_str(rd *r, const uint8_t **s, size_t *len)
{
	uint32_t l;

	if (get_u32(r, &l) < 0 || l > r->n)
		return -1;
	*s = r->p;
	*len = l;
	r->p += l;
	r->n -= l;
	return 0;
}

/* 1 when the next string is exactly `want` (consumed). */
static int get_is(rd *r, const char *want)
{
	const uint8_t *s;
	size_t len;

	return get_str(r, &s, &len) == 0 && len == strlen(want) && !memcmp(s, want, len);
}

static uint8_t *put_u32(uint8_t *d, uint32_t v)
{
	d[0] = (uint8_t)(v >> 24);
	d[1] = (uint8_t)(v >> 16);
	d[2] = (uint8_t)(v >> 8);
	d[3] = (uint8_t)v;
	return d + 4;
}

static uint8_t *put_str(uint8_t *d, const void *s, size_t len)
{
	d = put_u32(d, (uint32_t)len);
	memcpy(d, s, len);
	return d + len;
}

static void pub_blob(const uint8_t pk[ED25519_KEY_SIZE], uint8_t out[PUBBLOB_LEN])
{
	put_str(put_str(out, KEY_TYPE, 11), pk, ED25519_KEY_SIZE);
}

/* ---- base64 ------------------------------------------------------------------ */

/* Decodes src[0..len) (whitespace skipped, as nettle does) into a malloc'd
 * buffer; NULL when it is not base64. */
static uint8_t *b64_decode(const char *src, size_t len, size_t *outlen)
{
	struct base64_decode_ctx ctx;
	uint8_t *out = malloc(BASE64_DECODE_LENGTH(len) + 1);
	size_t n = BASE64_DECODE_LENGTH(len) + 1;

	if (!out)
		return NULL;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &n, out, len, src) || !base64_decode_final(&ctx)) {
		/* what was decoded may be a private key's */
		explicit_bzero(out, BASE64_DECODE_LENGTH(len) + 1);
		free(out);
		return NULL;
	}
	*outlen = n;
	return out;
}

/*
 * The armor ssh-keygen writes (sshsig_armor): the header line, the
 * base64 of the blob in lines of 70, the footer line and a newline.
 * malloc'd; NULL when out of memory.
 */
static char *armor(const uint8_t *blob, size_t len, size_t *outlen)
{
	size_t b64len = BASE64_ENCODE_RAW_LENGTH(len), i, o;
	char *b64, *out;

	if (!len || !(b64 = malloc(b64len)))
		return NULL;
	if (!(out = malloc(strlen(SIG_BEGIN) + b64len + b64len / 70 + 2 + strlen(SIG_END) + 2))) {
		free(b64);
		return NULL;
	}
	base64_encode_raw(b64, len, blob);
	o = strlen(SIG_BEGIN);
	memcpy(out, SIG_BEGIN, o);
	for (i = 0; i < b64len; i++) {
		out[o++] = b64[i];
		if (i % 70 == 69)
			out[o++] = '\n';
	}
	if ((b64len - 1) % 70 != 69)
		out[o++] = '\n';
	memcpy(out + o, SIG_END "\n", strlen(SIG_END) + 2);
	o += strlen(SIG_END) + 1;
	free(b64);
	*outlen = o;
	return out;
}

/*
 * The blob of an armored signature, only when sig[0..siglen) is exactly
 * the armor ssh-keygen writes for it (with or without its last newline:
 * git keeps a commit's without).  malloc'd; NULL when not.
 */
static uint8_t *dearmor(const char *sig, size_t siglen, size_t *bloblen)
{
	uint8_t *blob;
	char *again = NULL;
	size_t againlen = 0, start = strlen(SIG_BEGIN), flen = strlen(SIG_END) + 1, end;
	int same;

	if (siglen > AMP_SSHSIG_ARMOR_MAX || siglen < start || memcmp(sig, SIG_BEGIN, start))
		return NULL;
	/* the first footer, as ssh-keygen's sshsig_dearmor looks for it */
	for (end = start; end + flen <= siglen && memcmp(sig + end, "\n" SIG_END, flen); end++)
		;
	if (end + flen > siglen ||
	    !(blob = b64_decode(sig + start, end - start, bloblen)))
		return NULL;
	again = armor(blob, *bloblen, &againlen);
	same = again && (siglen == againlen || siglen + 1 == againlen) &&
	       !memcmp(sig, again, siglen);
	free(again);
	if (!same) {
		free(blob);
		return NULL;
	}
	return blob;
}

/* ---- the signature blob -------------------------------------------------------- */

/* The message an SSHSIG signature signs (PROTOCOL.sshsig "Signed Data"):
 * MAGIC, namespace, reserved "", hash algorithm, H(message).  malloc'd. */
static uint8_t *signed_data(const char *ns, const char *data, size_t len, size_t *outlen)
{
	struct sha512_ctx h;
	uint8_t digest[SHA512_DIGEST_SIZE], *out, *d;
	size_t nslen = strlen(ns);

	if (!(out = malloc(6 + 4 + nslen + 4 + 4 + 6 + 4 + SHA512_DIGEST_SIZE)))
		return NULL;
	sha512_init(&h);
	sha512_update(&h, len, (const uint8_t *)data);
	sha512_digest(&h, SHA512_DIGEST_SIZE, digest);
	memcpy(out, MAGIC, 6);
	d = put_str(out + 6, ns, nslen);
	d = put_str(d, "", 0);
	d = put_str(d, HASH_ALG, 6);
	d = put_str(d, digest, SHA512_DIGEST_SIZE);
	*outlen = (size_t)(d - out);
	return out;
}

/* The signer's public key and the Ed25519 signature of a canonical
 * SSHSIG blob in namespace ns; -1 when it is not one (see sshsig.h). */
static int parse_sig(const uint8_t *blob, size_t len, const char *ns,
		     uint8_t pk[ED25519_KEY_SIZE], uint8_t sig[ED25519_SIGNATURE_SIZE])
{
	rd r = { blob, len }, k, s;
	const uint8_t *kp, *sp, *v, *reserved;
	size_t klen, slen, vlen, rlen;
	uint32_t version;

	if (r.n < 6 || memcmp(r.p, MAGIC, 6))
		return -1;
	r.p += 6;
	r.n -= 6;
	if (get_u32(&r, &version) < 0 || version != SIG_VERSION || get_str(&r, &kp, &klen) < 0 ||
	    !get_is(&r, ns) || get_str(&r, &reserved, &rlen) < 0 || rlen ||
	    !get_is(&r, HASH_ALG) || get_str(&r, &sp, &slen) < 0 || r.n)
		return -1;
	k = (rd){ kp, klen };
	if (!get_is(&k, KEY_TYPE) || get_str(&k, &v, &vlen) < 0 || vlen != ED25519_KEY_SIZE || k.n)
		return -1;
	memcpy(pk, v, ED25519_KEY_SIZE);
	s = (rd){ sp, slen };
	if (!get_is(&s, KEY_TYPE) || get_str(&s, &v, &vlen) < 0 || vlen != ED25519_SIGNATURE_SIZE ||
	    s.n)
		return -1;
	memcpy(sig, v, ED25519_SIGNATURE_SIZE);
	return 0;
}

/* 1 when the 32 bytes encode a y below 2^255 - 19, as OpenSSH's Ed25519
 * needs of R (it compares R's bytes with a canonical encoding). */
static int canonical_point(const uint8_t b[32])
{
	int i;

	if ((b[31] & 0x7f) != 0x7f || b[0] < 0xed)
		return 1;
	for (i = 1; i < 31; i++)
		if (b[i] != 0xff)
			return 1;
	return 0;
}

/* ---- the private key ----------------------------------------------------------- */

/* The Ed25519 key pair of an unencrypted "openssh-key-v1" file
 * (PROTOCOL.key): 0, or -1 when it is not one. */
static int read_key(const char *path, uint8_t pk[ED25519_KEY_SIZE], uint8_t seed[32])
{
	char text[KEYFILE_MAX + 1], *b, *e;
	uint8_t *blob = NULL;
	size_t n, len = 0;
	const uint8_t *s, *v;
	size_t slen, vlen;
	uint32_t nkeys, c1, c2;
	rd r, p;
	FILE *f;
	int ok = -1;

	/* Every way out wipes the key material: text, the decoded blob and
	 * the seed (cleanup), and no stdio buffer holds a copy of the file
	 * (unbuffered: fread reads into text, which is wiped). */
	if (!(f = fopen(path, "r")))
		goto cleanup;
	setvbuf(f, NULL, _IONBF, 0);
	n = fread(text, 1, sizeof(text), f);
	fclose(f);
	if (n > KEYFILE_MAX)
		goto cleanup;
	text[n] = '\0';
	if (strncmp(text, KEY_BEGIN "\n", strlen(KEY_BEGIN) + 1) ||
	    !(e = strstr(text, "\n" KEY_END)))
		goto cleanup;
	b = text + strlen(KEY_BEGIN) + 1;
	if (!(blob = b64_decode(b, (size_t)(e - b), &len)))
		goto cleanup;
	r = (rd){ blob, len };
	if (r.n < sizeof(KEY_MAGIC) || memcmp(r.p, KEY_MAGIC, sizeof(KEY_MAGIC)))
		goto cleanup;
	r.p += sizeof(KEY_MAGIC);
	r.n -= sizeof(KEY_MAGIC);
	/* cipher "none", kdf "none", no kdf options: not encrypted */
	if (!get_is(&r, "none") || !get_is(&r, "none") || !get_is(&r, "") ||
	    get_u32(&r, &nkeys) < 0 || nkeys != 1 || get_str(&r, &s, &slen) < 0 ||
	    slen != PUBBLOB_LEN || get_str(&r, &v, &vlen) < 0 || r.n)
		goto cleanup;
	p = (rd){ v, vlen };
	{
		rd pb = { s, slen };
		const uint8_t *k;
		size_t klen, i;

		if (!get_is(&pb, KEY_TYPE) || get_str(&pb, &k, &klen) < 0 || klen != 32)
			goto cleanup;
		memcpy(pk, k, 32);
		/* check ints, the key, the comment, padding 1, 2, 3 ... to 8 */
		if (vlen % 8 || get_u32(&p, &c1) < 0 || get_u32(&p, &c2) < 0 || c1 != c2 ||
		    !get_is(&p, KEY_TYPE) || get_str(&p, &k, &klen) < 0 || klen != 32 ||
		    memcmp(k, pk, 32) || get_str(&p, &k, &klen) < 0 || klen != 64 ||
		    memcmp(k + 32, pk, 32) || get_str(&p, &s, &slen) < 0 || p.n >= 8)
			goto cleanup;
		for (i = 0; i < p.n; i++)
			if (p.p[i] != i + 1)
				goto cleanup;
		memcpy(seed, k, 32);
	}
	{
		uint8_t derived[ED25519_KEY_SIZE];

		ed25519_sha512_public_key(derived, seed);
		ok = memcmp(derived, pk, 32) ? -1 : 0;
	}
cleanup:
	if (blob) {
		explicit_bzero(blob, len);
		free(blob);
	}
	explicit_bzero(text, sizeof(text));
	if (ok < 0)
		explicit_bzero(seed, 32);
	return ok;
}

/* "ssh-ed25519 <base64 of the blob>" into buf (NUL-terminated). */
static void pub_line(const uint8_t pk[ED25519_KEY_SIZE], char *buf, size_t bufsz)
{
	uint8_t blob[PUBBLOB_LEN];
	char b64[BASE64_ENCODE_RAW_LENGTH(PUBBLOB_LEN) + 1];

	pub_blob(pk, blob);
	base64_encode_raw(b64, PUBBLOB_LEN, blob);
	b64[sizeof(b64) - 1] = '\0';
	snprintf(buf, bufsz, KEY_TYPE " %s", b64);
}

int amp_sshsig_public_key(const char *key, char *buf, size_t bufsz)
{
	uint8_t pk[ED25519_KEY_SIZE], seed[32];

	if (read_key(key, pk, seed) < 0)
		return 0;
	explicit_bzero(seed, sizeof(seed));
	pub_line(pk, buf, bufsz);
	return 1;
}

int amp_sshsig_sign(const char *key, const char *ns, const char *data, size_t len, char **sig,
		    size_t *siglen, amp_error *err)
{
	uint8_t pk[ED25519_KEY_SIZE], seed[32], raw[ED25519_SIGNATURE_SIZE], *msg = NULL;
	uint8_t *blob = NULL, *d;
	size_t msglen, nslen = strlen(ns);
	int status = 0;

	*sig = NULL;
	*siglen = 0;
	if (read_key(key, pk, seed) < 0)
		return 0;
	if (!(msg = signed_data(ns, data, len, &msglen)) ||
	    !(blob = malloc(6 + 4 + 4 + PUBBLOB_LEN + 4 + nslen + 4 + 4 + 6 + 4 + 4 + 11 + 4 +
			    ED25519_SIGNATURE_SIZE))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	ed25519_sha512_sign(pk, seed, msglen, msg, raw);
	/* PROTOCOL.sshsig "Blob format" */
	memcpy(blob, MAGIC, 6);
	d = put_u32(blob + 6, SIG_VERSION);
	d = put_u32(d, PUBBLOB_LEN);
	pub_blob(pk, d);
	d += PUBBLOB_LEN;
	d = put_str(d, ns, nslen);
	d = put_str(d, "", 0);
	d = put_str(d, HASH_ALG, 6);
	d = put_u32(d, 4 + 11 + 4 + ED25519_SIGNATURE_SIZE);
	d = put_str(put_str(d, KEY_TYPE, 11), raw, ED25519_SIGNATURE_SIZE);
	if (!(*sig = armor(blob, (size_t)(d - blob), siglen))) {
		status = amp_error_set(err, AMP_EIO, "", "out of memory");
		goto cleanup;
	}
	status = 1;
cleanup:
	explicit_bzero(seed, sizeof(seed));
	free(msg);
	free(blob);
	return status;
}

/* ---- the allowed-signers file -------------------------------------------------- */

/* One line of the file as ssh-keygen(1) "ALLOWED SIGNERS" reads it
 * (sshsig.c's parse_principals_key_and_options and sshsigopt_parse). */
typedef struct signer {
	char *principals;      /* the comma-separated list, as written */
	char *namespaces;      /* namespaces="..." (NULL: none) */
	uint64_t after;        /* valid-after (0: none) */
	uint64_t before;       /* valid-before (0: none) */
	uint8_t pk[ED25519_KEY_SIZE];
} signer;

/*
 * A time of the file, or of -Overify-time, as ssh-keygen's
 * parse_absolute_time reads it: YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS,
 * "Z" for UTC, else local time through mktime of a zeroed struct tm
 * (tm_isdst 0).  -1 for anything else (a lower-case "z", "UTC", a second
 * of 60: ssh-keygen may read them, this does not).
 */
static int parse_time(const char *v, uint64_t *out)
{
	struct tm tm;
	size_t l = strlen(v), i;
	int utc = l > 1 && v[l - 1] == 'Z', f[6] = { 0 };
	time_t t;

	if (utc)
		l--;
	if (l != 8 && l != 12 && l != 14)
		return -1;
	for (i = 0; i < l; i++)
		if (v[i] < '0' || v[i] > '9')
			return -1;
	f[0] = (v[0] - '0') * 1000 + (v[1] - '0') * 100 + (v[2] - '0') * 10 + (v[3] - '0');
	for (i = 1; 4 + 2 * i <= l; i++)
		f[i] = (v[2 + 2 * i] - '0') * 10 + (v[3 + 2 * i] - '0');
	if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 59)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = f[0] - 1900;
	tm.tm_mon = f[1] - 1;
	tm.tm_mday = f[2];
	tm.tm_hour = f[3];
	tm.tm_min = f[4];
	tm.tm_sec = f[5];
	t = utc ? timegm(&tm) : mktime(&tm);
	if (t <= 0)
		return -1;
	*out = (uint64_t)t;
	return 0;
}

/* The options of a line (sshsigopt_parse): valid-after, valid-before and
 * namespaces, each quoted, once, in lower case; -1 for anything else. */
static int parse_options(char *o, signer *sg)
{
	static const char *const names[] = { "valid-after=\"", "valid-before=\"", "namespaces=\"" };

	while (*o) {
		size_t k, len;
		char *v, *q;

		for (k = 0; k < 3 && strncmp(o, names[k], strlen(names[k])); k++)
			;
		if (k == 3)
			return -1;
		v = o + strlen(names[k]);
		if (!(q = strchr(v, '"')))
			return -1;
		*q = '\0';
		len = (size_t)(q - v);
		o = q + 1;
		if (k == 2) {
			/* a pattern list: only plain names are read here */
			if (sg->namespaces || strpbrk(v, "*?!"))
				return -1;
			sg->namespaces = v;
		} else {
			uint64_t *t = k ? &sg->before : &sg->after;

			if (*t || !len || parse_time(v, t) < 0)
				return -1;
		}
		if (!*o)
			break;
		if (*o != ',' || !*++o)
			return -1;
	}
	return sg->after && sg->before && sg->before <= sg->after ? -1 : 0;
}

/* The Ed25519 key of a "ssh-ed25519 <base64>" whose base64 is exactly
 * the canonical one (what ssh-keygen writes); -1 when not. */
static int parse_key(const char *b64, size_t len, uint8_t pk[ED25519_KEY_SIZE])
{
	char again[BASE64_ENCODE_RAW_LENGTH(PUBBLOB_LEN)];
	uint8_t *blob;
	size_t n = 0;
	int ok;

	if (len != sizeof(again) || !(blob = b64_decode(b64, len, &n)))
		return -1;
	ok = n == PUBBLOB_LEN && !memcmp(blob, "\0\0\0\013" KEY_TYPE "\0\0\0\040", 19);
	if (ok) {
		memcpy(pk, blob + 19, ED25519_KEY_SIZE);
		base64_encode_raw(again, PUBBLOB_LEN, blob);
		ok = !memcmp(again, b64, len);
	}
	free(blob);
	return ok ? 0 : -1;
}

/*
 * Reads one line (no newline, no NUL, no carriage return) into sg: 1 when
 * it is a line of an Ed25519 key read exactly as ssh-keygen reads it, 0
 * for a blank or comment line, -1 for a line this does not read.
 */
static int parse_line(char *line, signer *sg)
{
	char *p = line + strspn(line, " \t"), *end;
	int quoted = 0;

	memset(sg, 0, sizeof(*sg));
	if (!*p || *p == '#')
		return 0;
	/* principals: one token; quotes and patterns are ssh-keygen's */
	sg->principals = p;
	p += strcspn(p, " \t\"");
	if (*p != ' ' && *p != '\t')
		return -1;
	*p++ = '\0';
	if (strpbrk(sg->principals, "*?!"))
		return -1;
	p += strspn(p, " \t");
	if (strncmp(p, KEY_TYPE, 11) || (p[11] != ' ' && p[11] != '\t')) {
		/* options: up to a blank outside quotes */
		for (end = p; *end && (quoted || (*end != ' ' && *end != '\t')); end++) {
			if (*end == '\\')
				return -1;
			quoted ^= *end == '"';
		}
		if (quoted || !*end)
			return -1;
		*end++ = '\0';
		if (parse_options(p, sg) < 0)
			return -1;
		p = end + strspn(end, " \t");
		if (strncmp(p, KEY_TYPE, 11) || (p[11] != ' ' && p[11] != '\t'))
			return -1;
	}
	p += 11;
	p += strspn(p, " \t");
	return parse_key(p, strcspn(p, " \t"), sg->pk) < 0 ? -1 : 1;
}

/* 1 when principal is one of the comma-separated list (no patterns). */
static int in_list(const char *list, const char *principal)
{
	size_t n = strlen(principal);

	for (;;) {
		size_t len = strcspn(list, ",");

		if (len == n && !strncmp(list, principal, n))
			return 1;
		if (!list[len])
			return 0;
		list += len + 1;
	}
}

/*
 * ssh-keygen's check of the key pk against the file `allowed` at time
 * `when`: with `principal`, as -Y verify -I does (any line listing it,
 * for the key, in namespace ns, valid then); without, as -Y
 * find-principals does (the first line of the key valid then: its
 * principals into out).  1 when found, 0 when ssh-keygen certainly finds
 * none, -1 when a line that may name the key is not one read here.
 */
static int scan_signers(const char *allowed, const uint8_t pk[ED25519_KEY_SIZE],
			uint64_t when, const char *principal, const char *ns, char *out,
			size_t outsz)
{
	char mine[BASE64_ENCODE_RAW_LENGTH(PUBBLOB_LEN) + 16], *text = NULL, *line, *next;
	uint8_t blob[PUBBLOB_LEN];
	struct stat sb;
	size_t n = 0;
	FILE *f;
	int status = -1, unsure = 0;

	pub_blob(pk, blob);
	base64_encode_raw(mine, PUBBLOB_LEN, blob);
	/* without its padding: a line holding these may name the key */
	mine[BASE64_ENCODE_RAW_LENGTH(PUBBLOB_LEN) - 1] = '\0';
	if (!(f = fopen(allowed, "r")))
		return -1;
	if (fstat(fileno(f), &sb) < 0 || sb.st_size > SIGNERS_MAX ||
	    !(text = malloc((size_t)sb.st_size + 1)))
		goto cleanup;
	n = fread(text, 1, (size_t)sb.st_size + 1, f);
	if (n > (size_t)sb.st_size || ferror(f))
		goto cleanup;
	text[n] = '\0';
	status = 0;
	for (line = text; line < text + n && status == 0; line = next) {
		signer sg;
		int odd, may_name;
		char *nl = memchr(line, '\n', (size_t)(text + n - line));
		int rc;

		next = nl ? nl + 1 : text + n;
		if (nl)
			*nl = '\0';
		/* a NUL, a CR, a VT or FF (base64 skips them): not read here */
		odd = strlen(line) != (size_t)((nl ? nl : text + n) - line) ||
		      strpbrk(line, "\r\v\f") != NULL;
		/* a line without the key's base64 cannot name the key (looked
		 * for before parse_line cuts the line into its tokens) */
		may_name = odd || strstr(line, mine) != NULL;
		rc = odd ? -1 : parse_line(line, &sg);
		if (rc < 0) {
			if (!may_name)
				continue;
			unsure = 1;
			/* the first line granting the key counts: one that may
			 * do so before it leaves the answer to ssh-keygen */
			if (!principal)
				status = -1;
			continue;
		}
		if (rc == 0 || memcmp(sg.pk, pk, ED25519_KEY_SIZE) ||
		    (sg.after && when < sg.after) || (sg.before && when > sg.before))
			continue;
		if (!principal) {
			snprintf(out, outsz, "%s", sg.principals);
			status = strlen(sg.principals) < outsz ? 1 : -1;
		} else if (in_list(sg.principals, principal) &&
			   (!sg.namespaces || in_list(sg.namespaces, ns))) {
			status = 1;
		}
	}
	if (status == 0 && unsure)
		status = -1;
cleanup:
	fclose(f);
	free(text);
	return status;
}

/* ---- verifying ------------------------------------------------------------------- */

/*
 * The time ssh-keygen checks keys at when amp passes it when_s as
 * -Overify-time (sign.c: the local time's fields): those fields read back
 * as parse_absolute_time does (mktime, tm_isdst 0).  -1 when out of range.
 */
static int keygen_time(int64_t when_s, uint64_t *out)
{
	time_t t = (time_t)when_s;
	struct tm tm;
	char s[16];

	if (!localtime_r(&t, &tm) || !strftime(s, sizeof(s), "%Y%m%d%H%M%S", &tm))
		return -1;
	return parse_time(s, out);
}

/* The signer's key of a canonical armored signature in namespace ns (NULL:
 * any) and, with `data`, 0 only when its signature over data verifies. */
static int check_sig(const char *ns, const char *sig, size_t siglen, const char *data,
		     size_t len, uint8_t pk[ED25519_KEY_SIZE])
{
	uint8_t raw[ED25519_SIGNATURE_SIZE], *blob, *msg = NULL;
	size_t bloblen = 0, msglen = 0, nslen;
	rd r;
	const uint8_t *s;
	char nsbuf[256];
	int ok = -1;

	if (!(blob = dearmor(sig, siglen, &bloblen)))
		return -1;
	if (!ns) {
		/* find-principals reads the key, not the namespace */
		uint32_t version;

		if (bloblen < 6)
			goto cleanup;
		r = (rd){ blob + 6, bloblen - 6 };
		if (get_u32(&r, &version) < 0 || get_str(&r, &s, &nslen) < 0 ||
		    get_str(&r, &s, &nslen) < 0 || nslen >= sizeof(nsbuf) ||
		    memchr(s, '\0', nslen))
			goto cleanup;
		memcpy(nsbuf, s, nslen);
		nsbuf[nslen] = '\0';
		ns = nsbuf;
	}
	if (parse_sig(blob, bloblen, ns, pk, raw) < 0 || !canonical_point(raw))
		goto cleanup;
	if (!data) {
		ok = 0;
		goto cleanup;
	}
	if (!(msg = signed_data(ns, data, len, &msglen)))
		goto cleanup;
	ok = ed25519_sha512_verify(pk, msglen, msg, raw) ? 0 : -1;
cleanup:
	free(blob);
	free(msg);
	return ok;
}

int amp_sshsig_verify(const char *allowed, const char *ns, const char *sig, size_t siglen,
		      const char *data, size_t len, int64_t when_s, const char *principal)
{
	uint8_t pk[ED25519_KEY_SIZE];
	uint64_t when;

	if (keygen_time(when_s, &when) < 0 || check_sig(ns, sig, siglen, data, len, pk) < 0)
		return -1;
	return scan_signers(allowed, pk, when, principal, ns, NULL, 0);
}

int amp_sshsig_find_principals(const char *allowed, const char *sig, size_t siglen,
			       int64_t when_s, char *buf, size_t bufsz)
{
	uint8_t pk[ED25519_KEY_SIZE];
	uint64_t when;

	if (keygen_time(when_s, &when) < 0 || check_sig(NULL, sig, siglen, NULL, 0, pk) < 0)
		return -1;
	return scan_signers(allowed, pk, when, NULL, NULL, buf, bufsz);
}
