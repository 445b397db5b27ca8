/*
 * The on-disk cache of unwind tables: a file per object, named by its
 * build ID (else its identity on this machine) and used only for the CFI
 * bytes it was built from, which a keyed hash (SipHash-2-4) identifies.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "unwind/cache.h"
#include "unwind/rows.h"
#include "util/cache.h"
#include "util/io.h"
#include "util/log.h"

#define CACHE_MAGIC "HTUNWIND"
#define CACHE_VERSION 3         /* 2: the CFI bytes' key; 3: HT_CFA_SIGNAL rows */
#define CACHE_MAX_ROWS (1u << 26)
#define CACHE_KEY_LEN 16

/*
 * Files are keyed by object and CACHE_VERSION, not by heaptrace version:
 * CACHE_VERSION must change with the file format and with anything that
 * changes the rows built for an object, so that older files are not used.
 */
struct cache_hdr {
	char magic[8];
	uint32_t version;       /* CACHE_VERSION */
	uint32_t row_size;
	uint64_t n;
	uint32_t crc;           /* crc32 of the rows */
	uint32_t pad;
	uint64_t cfi_hash;      /* cfi_hash() of the bytes the rows were built from */
};

/*
 * A file of the cache that may be trusted: a regular file of ours that
 * nobody else can write (nor read, with private), with one name.
 */
static bool cache_file_ok(int fd, bool private)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 &&
	       !(st.st_mode & (private ? 077 : 022));
}

/*
 * The cache's secret: random bytes in the file "key" of the cache
 * directory, made once.  It keys the hash of the CFI bytes each entry was
 * built from (cfi_hash()), so that nobody who cannot read the directory
 * can make other bytes hash alike, as anyone can for a plain checksum.
 */
static int cache_key(int dfd, uint8_t key[CACHE_KEY_LEN])
{
	char tmp[64];

	for (int tries = 0; tries < 2; tries++) {
		int fd = openat(dfd, "key", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0) {
			struct stat st;
			bool ok = cache_file_ok(fd, true) && !fstat(fd, &st) && st.st_size == CACHE_KEY_LEN &&
				  !io_read_full(fd, key, CACHE_KEY_LEN);

			close(fd);
			if (!ok)
				ht_info("unwind cache: its key is not ours alone, or damaged; not using the cache");
			return ok ? 0 : -1;
		}
		if (errno != ENOENT)
			return -1;
		/* Written whole, then linked into place: of two heaptraces making one, both use the first. */
		snprintf(tmp, sizeof(tmp), ".key.%d.tmp", (int)getpid());
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		bool ok = getrandom(key, CACHE_KEY_LEN, 0) == CACHE_KEY_LEN && !io_write_full(fd, key, CACHE_KEY_LEN);
		ok = !close(fd) && ok;
		if (ok && linkat(dfd, tmp, dfd, "key", 0) && errno != EEXIST)
			ok = false;
		unlinkat(dfd, tmp, 0);
		if (!ok)
			return -1;
	}
	return -1;
}

/* SipHash-2-4 (Aumasson and Bernstein), fed in pieces; x86-64 only, so words are little-endian. */
struct sip {
	uint64_t v[4];
	uint64_t tail;          /* the bytes of an unfinished word */
	uint64_t len;
};

#define SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static void sip_rounds(struct sip *s, int n)
{
	uint64_t *v = s->v;

	while (n--) {
		v[0] += v[1], v[1] = SIP_ROTL(v[1], 13), v[1] ^= v[0], v[0] = SIP_ROTL(v[0], 32);
		v[2] += v[3], v[3] = SIP_ROTL(v[3], 16), v[3] ^= v[2];
		v[0] += v[3], v[3] = SIP_ROTL(v[3], 21), v[3] ^= v[0];
		v[2] += v[1], v[1] = SIP_ROTL(v[1], 17), v[1] ^= v[2], v[2] = SIP_ROTL(v[2], 32);
	}
}

static void sip_word(struct sip *s, uint64_t m)
{
	s->v[3] ^= m;
	sip_rounds(s, 2);
	s->v[0] ^= m;
}

static void sip_init(struct sip *s, const uint8_t key[CACHE_KEY_LEN])
{
	uint64_t k0, k1;

	memcpy(&k0, key, 8);
	memcpy(&k1, key + 8, 8);
	*s = (struct sip){ .v = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
				  k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull } };
}

static void sip_update(struct sip *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	while (n) {
		if (!(s->len & 7) && n >= 8) {
			uint64_t m;

			memcpy(&m, p, 8);
			sip_word(s, m);
			p += 8, n -= 8, s->len += 8;
			continue;
		}
		s->tail |= (uint64_t)*p++ << (8 * (s->len & 7));
		n--;
		if (!(++s->len & 7)) {
			sip_word(s, s->tail);
			s->tail = 0;
		}
	}
}

static uint64_t sip_final(struct sip *s)
{
	sip_word(s, s->len << 56 | s->tail);
	s->v[2] ^= 0xff;
	sip_rounds(s, 4);
	return s->v[0] ^ s->v[1] ^ s->v[2] ^ s->v[3];
}

static int hash_scn(struct sip *s, struct elfobj *o, Elf_Scn *scn)
{
	size_t size;
	const char *file = elf_rawfile(o->elf, &size);
	GElf_Shdr sh;

	if (!gelf_getshdr(scn, &sh))
		return -1;
	/* Where it is matters as much as what it says: CFI addresses are relative to the section. */
	sip_update(s, &sh.sh_addr, sizeof(sh.sh_addr));
	sip_update(s, &sh.sh_size, sizeof(sh.sh_size));
	sip_update(s, &sh.sh_flags, sizeof(sh.sh_flags));
	if (sh.sh_type == SHT_NOBITS)
		return 0;
	if (!file || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
		return -1;
	sip_update(s, file + sh.sh_offset, sh.sh_size);
	return 0;
}

/*
 * The keyed hash of every byte the rows are built from: the CFI section,
 * and with .eh_frame its .eh_frame_hdr, whose table libdw searches for a
 * pc's FDE.  An entry is used only for the bytes it was built from: a copy
 * of a library with its build ID kept and its CFI changed (anyone can make
 * one and have root trace it) gets rows of its own, and leaves the
 * original's alone.
 */
static int cfi_hash(struct elfobj *o, Elf_Scn *scn, bool eh, const uint8_t key[CACHE_KEY_LEN], uint64_t *out)
{
	GElf_Shdr sh;
	Elf_Scn *hdr = eh ? elfobj_section(o, ".eh_frame_hdr", NULL, &sh) : NULL;
	struct sip s;

	sip_init(&s, key);
	sip_update(&s, o->ehdr.e_ident, EI_NIDENT);
	if (hash_scn(&s, o, scn) || (hdr && hash_scn(&s, o, hdr)))
		return -1;
	*out = sip_final(&s);
	return 0;
}

/*
 * The object's cache file name: its build ID, else its identity on this
 * machine (device, inode, size, mtime).  The CFI section's size is part of
 * it too, so that an object rewritten with its build ID kept (objcopy)
 * does not take the original's rows.
 */
static void cache_name(struct elfobj *o, Elf_Scn *scn, char *name, size_t size)
{
	uint8_t id[64];
	size_t n = elfobj_build_id(o, id, sizeof(id)), len = 0;
	GElf_Shdr sh = { 0 };
	struct stat st;

	gelf_getshdr(scn, &sh);
	if (n) {
		for (size_t i = 0; i < n; i++)
			len += snprintf(name + len, size - len, "%02x", id[i]);
	} else if (!fstat(o->fd, &st)) {
		len = snprintf(name, size, "file-%jx-%jx-%jx-%jx.%09ld", (uintmax_t)st.st_dev,
			       (uintmax_t)st.st_ino, (uintmax_t)st.st_size,
			       (uintmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	} else {
		name[0] = 0;
		return;
	}
	/* The version too: heaptraces of two versions sharing a cache keep a file each, not rewrite one. */
	snprintf(name + len, size - len, "-%" PRIx64 ".v%d.unwind", (uint64_t)sh.sh_size, CACHE_VERSION);
}

static uint32_t rows_crc(const struct ht_unwind_row *rows, size_t n)
{
	return (uint32_t)crc32_z(crc32_z(0, NULL, 0), (const Bytef *)rows, n * sizeof(*rows));
}

/* What the BPF side relies on: increasing pcs and kinds it knows. */
static bool rows_valid(const struct ht_unwind_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if ((i && rows[i].pc <= rows[i - 1].pc) || rows[i].cfa > HT_CFA_SIGNAL ||
		    rows[i].rbp > HT_RBP_UNKNOWN)
			return false;
	}
	return true;
}

/*
 * 0 with the rows, or -1: missing, not exactly what unwind_cache_store writes,
 * not ours alone, or built from other bytes than those that hash to
 * cfi_hash.
 */
int unwind_cache_load(const struct unwind_cache *c, struct unwind_table *out)
{
	const char *name = c->name;
	int fd = c->dfd >= 0 ? openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	struct ht_unwind_row *rows = NULL;
	struct cache_hdr h;
	struct stat st;

	if (fd < 0)
		return -1;
	if (!cache_file_ok(fd, false) || fstat(fd, &st) || io_read_full(fd, &h, sizeof(h)) ||
	    memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) || h.version != CACHE_VERSION ||
	    h.row_size != sizeof(*rows) || h.n > CACHE_MAX_ROWS ||
	    (uint64_t)st.st_size != sizeof(h) + h.n * sizeof(*rows))
		goto bad;
	if (h.cfi_hash != c->cfi_hash) {
		ht_info("unwind cache: %s was built from other bytes of CFI; rebuilding", name);
		close(fd);
		return -1;
	}
	if (h.n && (!(rows = malloc(h.n * sizeof(*rows))) || io_read_full(fd, rows, h.n * sizeof(*rows))))
		goto bad;
	if (rows_crc(rows, h.n) != h.crc || !rows_valid(rows, h.n))
		goto bad;
	close(fd);
	out->rows = rows;
	out->n = h.n;
	out->from_cache = true;
	return 0;
bad:
	ht_info("unwind cache: ignoring %s", name);
	free(rows);
	close(fd);
	return -1;
}

void unwind_cache_store(const struct unwind_cache *c, const struct unwind_table *t)
{
	struct cache_hdr h = { .version = CACHE_VERSION, .row_size = sizeof(*t->rows), .n = t->n,
			       .cfi_hash = c->cfi_hash };
	struct iovec iov[2] = { { &h, sizeof(h) }, { t->rows, t->n * sizeof(*t->rows) } };

	if (c->dfd < 0)
		return;
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.crc = rows_crc(t->rows, t->n);
	if (cache_writev(c->dfd, c->name, iov, 2))
		ht_info("unwind cache: cannot write %s: %s", c->name, strerror(errno));
}

void unwind_cache_open(struct unwind_cache *c, struct elfobj *o, Elf_Scn *scn, bool eh)
{
	uint8_t key[CACHE_KEY_LEN];

	cache_name(o, scn, c->name, sizeof(c->name));
	c->dfd = c->name[0] ? cache_dir_open(NULL, 0) : -1;
	if (c->dfd >= 0 && (cache_key(c->dfd, key) || cfi_hash(o, scn, eh, key, &c->cfi_hash))) {
		close(c->dfd);
		c->dfd = -1;
	}
}

void unwind_cache_close(struct unwind_cache *c)
{
	if (c->dfd >= 0)
		close(c->dfd);
	c->dfd = -1;
}
