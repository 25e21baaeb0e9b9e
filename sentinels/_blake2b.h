/* BLAKE2b as RFC 7693 states it (unkeyed), for the ledgers' 64-bit keys: the first 8 bytes
 * of the digest read as a big-endian signed integer, what hashlib.blake2b's digest and
 * int.from_bytes(..., "big", signed=True) give, without the hashlib object, the encoded copy
 * and the int conversion that were most of the time spent hashing every response's key.
 * Included by sentinels/token_ledger/_fastline.c (an 8-byte digest) and
 * sentinels/agent_ledger/_keyhash.c (a 16-byte digest); their tests hold each equal to
 * hashlib's over keys of every length around the 128-byte block. */
#ifndef AGENTWATCH_BLAKE2B_H
#define AGENTWATCH_BLAKE2B_H

#include <stdint.h>
#include <string.h>

static const uint64_t BLAKE2B_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t BLAKE2B_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t blake2b_rotr64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static inline uint64_t blake2b_load64le(const unsigned char *p) {
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = (x << 8) | p[i];
    return x;
}

#define BLAKE2B_G(a, b, c, d, x, y)                                                  \
    do {                                                                             \
        v[a] = v[a] + v[b] + (x); v[d] = blake2b_rotr64(v[d] ^ v[a], 32);            \
        v[c] = v[c] + v[d];       v[b] = blake2b_rotr64(v[b] ^ v[c], 24);            \
        v[a] = v[a] + v[b] + (y); v[d] = blake2b_rotr64(v[d] ^ v[a], 16);            \
        v[c] = v[c] + v[d];       v[b] = blake2b_rotr64(v[b] ^ v[c], 63);            \
    } while (0)

/* written out per round: the message indices are then constants (the loop took twice as long) */
#define BLAKE2B_ROUND(r)                                                             \
    do {                                                                             \
        BLAKE2B_G(0, 4, 8, 12, m[BLAKE2B_SIGMA[r][0]], m[BLAKE2B_SIGMA[r][1]]);      \
        BLAKE2B_G(1, 5, 9, 13, m[BLAKE2B_SIGMA[r][2]], m[BLAKE2B_SIGMA[r][3]]);      \
        BLAKE2B_G(2, 6, 10, 14, m[BLAKE2B_SIGMA[r][4]], m[BLAKE2B_SIGMA[r][5]]);     \
        BLAKE2B_G(3, 7, 11, 15, m[BLAKE2B_SIGMA[r][6]], m[BLAKE2B_SIGMA[r][7]]);     \
        BLAKE2B_G(0, 5, 10, 15, m[BLAKE2B_SIGMA[r][8]], m[BLAKE2B_SIGMA[r][9]]);     \
        BLAKE2B_G(1, 6, 11, 12, m[BLAKE2B_SIGMA[r][10]], m[BLAKE2B_SIGMA[r][11]]);   \
        BLAKE2B_G(2, 7, 8, 13, m[BLAKE2B_SIGMA[r][12]], m[BLAKE2B_SIGMA[r][13]]);    \
        BLAKE2B_G(3, 4, 9, 14, m[BLAKE2B_SIGMA[r][14]], m[BLAKE2B_SIGMA[r][15]]);    \
    } while (0)

/* F: one 128-byte block into the state; `counted` bytes hashed so far, this block included */
static void blake2b_compress(uint64_t h[8], const unsigned char block[128], uint64_t counted,
                             int last) {
    uint64_t v[16], m[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = BLAKE2B_IV[i];
    }
    v[12] ^= counted; /* the counter's high word stays 0: keys are far below 2**64 bytes */
    if (last) v[14] = ~v[14];
    for (int i = 0; i < 16; i++) m[i] = blake2b_load64le(block + 8 * i);
    BLAKE2B_ROUND(0);
    BLAKE2B_ROUND(1);
    BLAKE2B_ROUND(2);
    BLAKE2B_ROUND(3);
    BLAKE2B_ROUND(4);
    BLAKE2B_ROUND(5);
    BLAKE2B_ROUND(6);
    BLAKE2B_ROUND(7);
    BLAKE2B_ROUND(8);
    BLAKE2B_ROUND(9);
    BLAKE2B_ROUND(10);
    BLAKE2B_ROUND(11);
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* BLAKE2b(data)'s final state for a `digest_length`-byte digest (8 to 64): the digest is its
 * words' bytes, little-endian, cut to that length. */
static void blake2b_state(const unsigned char *data, size_t size, unsigned digest_length,
                          uint64_t h[8]) {
    memcpy(h, BLAKE2B_IV, 8 * sizeof h[0]);
    h[0] ^= 0x01010000ULL ^ digest_length; /* fanout 1, depth 1, no key */
    unsigned char block[128];
    size_t done = 0;
    while (size - done > 128) { /* every block but the last */
        blake2b_compress(h, data + done, (uint64_t)(done + 128), 0);
        done += 128;
    }
    memset(block, 0, sizeof block);
    memcpy(block, data + done, size - done);
    blake2b_compress(h, block, (uint64_t)size, 1);
}

/* The first 8 bytes of BLAKE2b(data) with a `digest_length`-byte digest, read as a
 * big-endian signed integer. */
static int64_t blake2b_first8(const unsigned char *data, size_t size, unsigned digest_length) {
    uint64_t h[8];
    blake2b_state(data, size, digest_length, h);
    uint64_t digest = 0; /* h[0]'s bytes are the digest's first 8, little-endian */
    for (int i = 0; i < 8; i++) digest = (digest << 8) | ((h[0] >> (8 * i)) & 0xff);
    return (int64_t)digest;
}

#endif
