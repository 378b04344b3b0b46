/*
 * DESIGN: unit tests for the ClickHouse native-protocol codec (connectors/clickhouse/):
 * CityHash128 v1.0.2 against vectors from an independent implementation, LZ4 framing both
 * ways, the type-name parser, the resumable reader on byte streams captured from the real
 * ClickHouse 18.16 server (Hello, a result block of every type, LowCardinality, LZ4-compressed
 * frames the server checksummed, an Exception) fed whole, byte by byte and in odd pieces;
 * encoding that reproduces the server's own bytes; encode→decode of every type with NULLs and
 * edge values at old and new revisions; refusals of malformed input; and the sink's rules for
 * which SQL type goes into which ClickHouse type. Hermetic: no server is needed.
 * Threads: the main thread only.
 *
 * The HEX_* streams are what the server sent (captured with a tee under the client, server
 * ClickHouse 18.16.1, revision 54412, time zone Etc/UTC): everything after our Hello for
 *   Q1 = SELECT toInt8(-128) AS i8, toInt16(-32768) AS i16, toInt32(-2147483648) AS i32,
 *        toInt64(-9223372036854775808) AS i64, toUInt8(255) AS u8, toUInt16(65535) AS u16,
 *        toUInt32(4294967295) AS u32, toUInt64(18446744073709551615) AS u64,
 *        toFloat32(1.5) AS f32, toFloat64(-2.25) AS f64, arrayJoin(['héllo', '', 'a\nb']) AS s,
 *        toFixedString('ab', 3) AS fs, toDate(17000) AS d, toDateTime(1700000000) AS dt,
 *        toDecimal32('-1234.56', 2) AS d32, toDecimal64('123456789.0123', 4) AS d64,
 *        toDecimal128('-12345678901234567890.123456789', 9) AS d128,
 *        if(s = '', CAST(NULL AS Nullable(String)), s) AS ns,
 *        if(s = 'héllo', CAST(NULL AS Nullable(Int32)), toNullable(toInt32(length(s)))) AS ni
 * without and with compression; the TYPES streams are a two-row UNION ALL of the same types
 * plus toLowCardinality('x') AS lc and CAST('y' | NULL AS LowCardinality(Nullable(String))) AS
 * lcn; HELLO_SELECT1 is the Hello and the reply to SELECT 1 AS x; AUTH_FAILED the answer to a
 * Hello with a wrong password.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "connectors/clickhouse/ch_block.h"
#include "connectors/clickhouse/ch_compress.h"
#include "connectors/clickhouse/ch_proto.h"
#include "connectors/clickhouse/ch_reader.h"
#include "connectors/clickhouse/ch_sink.h"
#include "connectors/clickhouse/cityhash.h"
#include "test_connectors_util.h"

static const char HEX_HELLO_SELECT1[] =
    "000a436c69636b486f75736512108ca903074574632f55544302766d010100010002ffffffff00010001780555496e74"
    "380100010002ffffffff00010101780555496e74380106010109000001030101000100010002ffffffff00000005";

static const char HEX_Q1_PLAIN[] =
    "0100010002ffffffff00130002693804496e74380369313605496e7431360369333205496e7433320369363405496e74"
    "36340275380555496e7438037531360655496e743136037533320655496e743332037536340655496e74363403663332"
    "07466c6f617433320366363407466c6f61743634017306537472696e670266730e4669786564537472696e6728332901"
    "640444617465026474084461746554696d65036433320d446563696d616c28392c203229036436340e446563696d616c"
    "2831382c20342904643132380e446563696d616c2833382c203929026e73104e756c6c61626c6528537472696e672902"
    "6e690f4e756c6c61626c6528496e743332290100010002ffffffff00130302693804496e74388080800369313605496e"
    "7431360080008000800369333205496e7433320000008000000080000000800369363405496e74363400000000000000"
    "80000000000000008000000000000000800275380555496e7438ffffff037531360655496e743136ffffffffffff0375"
    "33320655496e743332ffffffffffffffffffffffff037536340655496e743634ffffffffffffffffffffffffffffffff"
    "ffffffffffffffff0366333207466c6f617433320000c03f0000c03f0000c03f0366363407466c6f6174363400000000"
    "000002c000000000000002c000000000000002c0017306537472696e670668c3a96c6c6f0003610a620266730e466978"
    "6564537472696e6728332961620061620061620001640444617465684268426842026474084461746554696d6500f153"
    "6500f1536500f15365036433320d446563696d616c28392c203229c01dfeffc01dfeffc01dfeff036436340e44656369"
    "6d616c2831382c203429cb04fb711f010000cb04fb711f010000cb04fb711f01000004643132380e446563696d616c28"
    "33382c203929eb7ec6914e3641b9cde41bd8ffffffffeb7ec6914e3641b9cde41bd8ffffffffeb7ec6914e3641b9cde4"
    "1bd8ffffffff026e73104e756c6c61626c6528537472696e67290001000668c3a96c6c6f0003610a62026e690f4e756c"
    "6c61626c6528496e74333229010000060000000000000003000000060301b102000001030101000100010002ffffffff"
    "00000005";

static const char HEX_Q1_LZ4[] =
    "01006b997107a8bcc813e72537a77b99075482eb00000000010000f011010002ffffffff00130002693804496e743803"
    "69313605496e743136036933320a00603332036936340a007136340275380555270040753136060a0061313603753332"
    "0b00613332037536340b00f20336340366333207466c6f61743332036636340c00f2053634017306537472696e670266"
    "730e46697865640f00e028332901640444617465026474080800f40c54696d65036433320d446563696d616c28392c20"
    "3229036436340e1200b531382c20342904643132381400f20433382c203929026e73104e756c6c61626c652862005529"
    "026e690f140060496e743332290100ae221b15bfda6fc53cb0bffa6a5b73eb827d01000017020000f012010002ffffff"
    "ff00130302693804496e74388080800369313605496e7431360080020040036933321000643332000000800400400369"
    "36341600323634000100001a00000200050800500275380555540080ffffff03753136060d0020313671000011002133"
    "3211002033320f000402004103753634170024363413000c0200910366333207466c6f61910024c03f04004203663634"
    "18000493002002c09000080800f20f017306537472696e670668c3a96c6c6f0003610a620266730e46697865641b0062"
    "283329616200030090016404446174656842020040026474080e007554696d6500f1530400f407036433320d44656369"
    "6d616c28392c203229c01dfeff040054036436340e1e00ec31382c203429cb04fb711f01000008005504643132382c00"
    "f00333382c203929eb7ec6914e3641b9cde41bd80a010f10000dd2026e73104e756c6c61626c6528d1004929000100f0"
    "00356e690f2300018201f00129010000060000000000000003000000060301b102000001030101000100a783ac6cd55c"
    "7a7cb5ac46bddb86e21482140000000a000000a0010002ffffffff00000005";

static const char HEX_TYPES_PLAIN[] =
    "0100010002ffffffff00150002693804496e74380369313605496e7431360369333205496e7433320369363405496e74"
    "36340275380555496e7438037531360655496e743136037533320655496e743332037536340655496e74363403663332"
    "07466c6f617433320366363407466c6f61743634017306537472696e670266730e4669786564537472696e6728332901"
    "640444617465026474084461746554696d65036433320d446563696d616c28392c203229036436340e446563696d616c"
    "2831382c20342904643132380e446563696d616c2833382c203929026e73104e756c6c61626c6528537472696e672902"
    "6e690f4e756c6c61626c6528496e74333229026c63164c6f7743617264696e616c69747928537472696e6729036c636e"
    "204c6f7743617264696e616c697479284e756c6c61626c6528537472696e6729290100010002ffffffff001501026938"
    "04496e7438800369313605496e74313600800369333205496e743332000000800369363405496e743634000000000000"
    "00800275380555496e7438ff037531360655496e743136ffff037533320655496e743332ffffffff037536340655496e"
    "743634ffffffffffffffff0366333207466c6f617433320000c03f0366363407466c6f6174363400000000000002c001"
    "7306537472696e670668c3a96c6c6f0266730e4669786564537472696e67283329616200016404446174656842026474"
    "084461746554696d6500f15365036433320d446563696d616c28392c203229c01dfeff036436340e446563696d616c28"
    "31382c203429cb04fb711f01000004643132380e446563696d616c2833382c203929eb7ec6914e3641b9cde41bd8ffff"
    "ffff026e73104e756c6c61626c6528537472696e67290100026e690f4e756c6c61626c6528496e743332290007000000"
    "026c63164c6f7743617264696e616c69747928537472696e672901000000000000000006000000000000020000000000"
    "0000000178010000000000000001036c636e204c6f7743617264696e616c697479284e756c6c61626c6528537472696e"
    "672929010000000000000000060000000000000300000000000000000001790100000000000000020100010002ffffff"
    "ff00150102693804496e74387f0369313605496e743136ff7f0369333205496e743332ffffff7f0369363405496e7436"
    "34ffffffffffffff7f0275380555496e743800037531360655496e7431360000037533320655496e7433320000000003"
    "7536340655496e74363400000000000000000366333207466c6f61743332000000800366363407466c6f61743634a0c8"
    "eb85f3cce17f017306537472696e67000266730e4669786564537472696e672833296162630164044461746500000264"
    "74084461746554696d6500000000036433320d446563696d616c28392c20322901000000036436340e446563696d616c"
    "2831382c203429ffffffffffffffff04643132380e446563696d616c2833382c20392900000000000000000000000000"
    "000000026e73104e756c6c61626c6528537472696e672900016e026e690f4e756c6c61626c6528496e74333229010000"
    "0000026c63164c6f7743617264696e616c69747928537472696e67290100000000000000000600000000000002000000"
    "00000000000178010000000000000001036c636e204c6f7743617264696e616c697479284e756c6c61626c6528537472"
    "696e6729290100000000000000000600000000000002000000000000000000010000000000000000060202cd02000001"
    "030202000100010002ffffffff00000005";

static const char HEX_TYPES_LZ4[] =
    "0100ec7a7dffcecfd20c4293b0a60a89988482120100003f010000f011010002ffffffff00150002693804496e743803"
    "69313605496e743136036933320a00603332036936340a007136340275380555270040753136060a0061313603753332"
    "0b00613332037536340b00f20336340366333207466c6f61743332036636340c00f2053634017306537472696e670266"
    "730e46697865640f00e028332901640444617465026474080800f40c54696d65036433320d446563696d616c28392c20"
    "3229036436340e1200b531382c20342904643132381400f20433382c203929026e73104e756c6c61626c652862005529"
    "026e690f140001b000f40429026c63164c6f7743617264696e616c6974792d005b036c636e201b00053d008053747269"
    "6e6729290100e3140b660f0678644b2e0fed36ea2dbc828a010000e5010000f014010002ffffffff0015010269380449"
    "6e7438800369313605496e7431360080036933320c0040333200000e002036340e003236340001006080027538055536"
    "0060ff03753136060b00813136ffff037533320d002033325e0041037536340f002036340f0000020091036633320746"
    "6c6f615b0062c03f036636341000045d00f20c02c0017306537472696e670668c3a96c6c6f0266730e46697865641600"
    "f004283329616200016404446174656842026474080a00f41454696d6500f15365036433320d446563696d616c28392c"
    "203229c01dfeff036436340e1600f50431382c203429cb04fb711f01000004643132381c00f00333382c203929eb7ec6"
    "914e3641b9cde41bd8b700d2026e73104e756c6c61626c6528870075290100026e690f160001f600f609290007000000"
    "026c63164c6f7743617264696e616c697479340002410122000608001202070044000001781b006b01036c636e203f00"
    "056600037c0014292e0004490010034500010200b001790100000000000000020100a0878d1e056334d320bb4db87320"
    "43148275010000de010000f014010002ffffffff00150102693804496e74387f0369313605496e743136ff7f03693332"
    "0c00403332ffff0e002036340e0020363434000012005002753805553600600003753136060b00813136000003753332"
    "0d0040333200000f002136340f002036340f00000200920366333207466c6f6123005280036636341000f20e3634a0c8"
    "eb85f3cce17f017306537472696e67000266730e46697865641000f00428332961626301640444617465000002647408"
    "0a004154696d655c00f0036433320d446563696d616c28392c203229018500446436340e16006131382c203429c40085"
    "ffffff04643132381c006033382c2039294900080200d2026e73104e756c6c61626c65288700852900016e026e690f17"
    "0001f100016d00f40400026c63164c6f7743617264696e616c6974793500008c00010200110606002200020700440000"
    "01781b006b01036c636e203f00056600037d000268000002000c4900a000010000000000000000060202cd0200000103"
    "0202000100a783ac6cd55c7a7cb5ac46bddb86e21482140000000a000000a0010002ffffffff00000005";

static const char HEX_AUTH_FAILED[] =
    "02c10000000d44423a3a457863657074696f6e2c44423a3a457863657074696f6e3a2057726f6e672070617373776f72"
    "6420666f72207573657220636c696e6be00a302e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962636c"
    "69636b686f7573652e736f2e31382e313628537461636b54726163653a3a537461636b547261636528292b3078313629"
    "205b30783766326265346237393861365d0a312e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962636c"
    "69636b686f7573652e736f2e31382e3136282b30783138663935643229205b30783766326265326166393564325d0a32"
    "2e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962636c69636b686f7573652e736f2e31382e3136282b"
    "30783132303337366529205b30783766326265323430333736655d0a332e202f6c69622f7838365f36342d6c696e7578"
    "2d676e752f6c6962636c69636b686f7573652e736f2e31382e3136282b30783132303337643829205b30783766326265"
    "323430333764385d0a342e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962636c69636b686f7573652e"
    "736f2e31382e31362844423a3a436f6e746578743a3a73657455736572287374643a3a5f5f63787831313a3a62617369"
    "635f737472696e673c636861722c207374643a3a636861725f7472616974733c636861723e2c207374643a3a616c6c6f"
    "6361746f723c636861723e203e20636f6e7374262c207374643a3a5f5f63787831313a3a62617369635f737472696e67"
    "3c636861722c207374643a3a636861725f7472616974733c636861723e2c207374643a3a616c6c6f6361746f723c6368"
    "61723e203e20636f6e7374262c20506f636f3a3a4e65743a3a536f636b65744164647265737320636f6e7374262c2073"
    "74643a3a5f5f63787831313a3a62617369635f737472696e673c636861722c207374643a3a636861725f747261697473"
    "3c636861723e2c207374643a3a616c6c6f6361746f723c636861723e203e20636f6e737426292b3078383929205b3078"
    "3766326265326335653434395d0a352e202f7573722f7362696e2f636c69636b686f7573652d736572766572282b3078"
    "373435303829205b30783536306164646439343530385d0a362e202f7573722f7362696e2f636c69636b686f7573652d"
    "736572766572282b3078376162643429205b30783536306164646439616264345d0a372e202f6c69622f7838365f3634"
    "2d6c696e75782d676e752f6c6962506f636f4e65742e736f2e383028506f636f3a3a4e65743a3a544350536572766572"
    "436f6e6e656374696f6e3a3a737461727428292b30783729205b30783766326265306264343336375d0a382e202f6c69"
    "622f7838365f36342d6c696e75782d676e752f6c6962506f636f4e65742e736f2e383028506f636f3a3a4e65743a3a54"
    "4350536572766572446973706174636865723a3a72756e28292b3078623629205b30783766326265306264346564365d"
    "0a392e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962506f636f466f756e646174696f6e2e736f2e38"
    "3028506f636f3a3a506f6f6c65645468726561643a3a72756e28292b3078386529205b30783766326265306436353865"
    "655d0a31302e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962506f636f466f756e646174696f6e2e73"
    "6f2e383028506f636f3a3a546872656164496d706c3a3a72756e6e61626c65456e74727928766f69642a292b30783962"
    "29205b30783766326265306436326266625d0a31312e202f6c69622f7838365f36342d6c696e75782d676e752f6c6962"
    "632e736f2e36282b3078383931663529205b30783766326265303661373166355d0a31322e202f6c69622f7838365f36"
    "342d6c696e75782d676e752f6c6962632e736f2e36282b307831303938656329205b3078376632626530373237386563"
    "5d0a00";

/* ================================================================ helpers ====== */

static uint8_t *unhex(const char *hex, size_t *n) {
  size_t len = strlen(hex) / 2;
  uint8_t *out = ck_malloc(len ? len : 1);
  for (size_t i = 0; i < len; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
  *n = len;
  return out;
}

/* A decoded stream: its packets' types and every Data block with rows re-encoded, so two
 * decodings can be compared byte for byte. */
typedef struct decoded {
  int npk;
  uint64_t types[64];
  ck_buf_t blocks;   /* re-encoded Data blocks with rows, back to back */
  ck_ch_block_t first; /* a copy of the first Data block with rows */
  int nblocks;
  int32_t exc_code;
  char exc_msg[256];
  char hello[128];
} decoded_t;

static void copy_block(ck_ch_block_t *dst, const ck_ch_block_t *src) {
  ck_ch_block_init(dst);
  for (int i = 0; i < src->ncols; i++) {
    int k = ck_ch_block_add_col(dst, src->cols[i].name, src->cols[i].type_name, NULL);
    assert_int_equal(k, i);
    ck_ch_col_t *d = &dst->cols[i];
    const ck_ch_col_t *s = &src->cols[i];
    ck_buf_append(&d->nulls, s->nulls.data, s->nulls.len);
    ck_buf_append(&d->data, s->data.data, s->data.len);
    ck_buf_append(&d->offs, s->offs.data, s->offs.len);
    d->rows = s->rows;
  }
  dst->rows = src->rows;
}

/* Feeds the stream in pieces of `chunk` bytes (0: all at once; -1: pseudo-random 1..37). */
static void decode_stream(const uint8_t *data, size_t n, int rev_client, bool compressed,
                          int chunk, decoded_t *out) {
  memset(out, 0, sizeof *out);
  ck_buf_init(&out->blocks);
  ck_ch_block_init(&out->first);
  ck_ch_reader_t r;
  ck_ch_reader_init(&r, rev_client);
  r.compressed = compressed;
  if (rev_client == 54412) r.revision = 54412; /* streams captured after the Hello */
  size_t fed = 0;
  uint32_t seed = 12345;
  for (;;) {
    const ck_ch_packet_t *p;
    ck_error_t err = {0};
    int rc = ck_ch_reader_next(&r, &p, &err);
    if (rc == CK_CH_NEED_MORE) {
      if (fed == n) break;
      size_t k = chunk == 0 ? n - fed : chunk > 0 ? (size_t)chunk : (seed = seed * 1103515245 + 12345, 1 + (seed >> 16) % 37);
      if (k > n - fed) k = n - fed;
      ck_ch_reader_feed(&r, data + fed, k);
      fed += k;
      continue;
    }
    if (rc) fail_msg("reader failed: %s", err.message);
    assert_true(out->npk < 64);
    out->types[out->npk++] = p->type;
    if (p->type == CK_CH_SERVER_HELLO)
      snprintf(out->hello, sizeof out->hello, "%s %llu.%llu.%llu rev %llu tz %s name %s", p->hello.name,
               (unsigned long long)p->hello.major, (unsigned long long)p->hello.minor,
               (unsigned long long)p->hello.patch, (unsigned long long)p->hello.revision,
               p->hello.timezone, p->hello.display_name);
    if (p->type == CK_CH_SERVER_EXCEPTION) {
      out->exc_code = p->exc.code;
      snprintf(out->exc_msg, sizeof out->exc_msg, "%s", p->exc.message);
    }
    if (p->type == CK_CH_SERVER_DATA && p->block.rows) {
      ck_ch_block_write(&p->block, 54412, &out->blocks);
      if (out->nblocks++ == 0) copy_block(&out->first, &p->block);
    }
  }
  assert_int_equal(ck_ch_reader_pending(&r), 0);
  ck_ch_reader_fini(&r);
}

static void decoded_fini(decoded_t *d) {
  ck_buf_fini(&d->blocks);
  ck_ch_block_fini(&d->first);
}

static const ck_ch_col_t *col(const ck_ch_block_t *b, const char *name) {
  int i = ck_ch_block_find(b, name);
  if (i < 0) fail_msg("no column %s", name);
  return &b->cols[i];
}

static void assert_str(const ck_ch_col_t *c, size_t row, const char *want) {
  size_t n;
  const char *s = ck_ch_col_str(c, row, &n);
  if (n != strlen(want) || memcmp(s, want, n) != 0)
    fail_msg("column %s row %zu: got '%.*s', want '%s'", c->name, row, (int)n, s, want);
}

static void assert_i128(__int128 got, const char *want) {
  ck_buf_t b;
  ck_buf_init(&b);
  ck_decimal_format(got, 0, &b);
  if (strcmp(b.data, want) != 0) fail_msg("got %s, want %s", b.data, want);
  ck_buf_fini(&b);
}

/* ================================================================ cityhash ====== */

static void test_cityhash_matches_reference_vectors(void **state) {
  /* CityHash128 v1.0.2 of bytes (7i + 3) mod 256, from the clickhouse-cityhash package (a
   * separate implementation): every length class — 0, <8, 8..15, 16..127 (CityMurmur), and
   * >= 128 with each tail length. */
  static const struct {
    int n;
    uint64_t first, second;
  } v[] = {
      {0, 0x3df09dfc64c09a2bULL, 0x3cb540c392e51e29ULL},
    {1, 0x39379490ccb55d55ULL, 0x2af2b13064cd571fULL},
    {2, 0x68c0a9f9e5d1cd3bULL, 0x0c1fb759a0403669ULL},
    {3, 0x3108fa6b1da16986ULL, 0x32301bf0c250612dULL},
    {4, 0x2321e75aee8d6c41ULL, 0xcea6b327f605358dULL},
    {7, 0x9ef90f69597e95c7ULL, 0x4987956c9782ee8fULL},
    {8, 0xb6ad7c9a5953432fULL, 0x9f0e02109921888cULL},
    {9, 0x5601ccf1e058519aULL, 0xf8512fca28333fefULL},
    {15, 0x5a8299d8ab8f2f47ULL, 0x8ea0a478a90d3277ULL},
    {16, 0x21e79cab7f9c2b79ULL, 0xa35615c235313f7aULL},
    {17, 0x0cd5bb13faea6e4cULL, 0x32bf719178f6bbfeULL},
    {31, 0x6e4f70325ec27ffcULL, 0x9a23a7e9f0b515e0ULL},
    {32, 0x67cfab8404eec7e9ULL, 0x80cd3c27f5bd61eeULL},
    {33, 0x094bbf1d5b6ddb61ULL, 0x10572bd58efa7aafULL},
    {63, 0x2c8eaec1978f5c3cULL, 0xe8bd464df668c1e0ULL},
    {64, 0xd412d58ec1432aefULL, 0x5754630cbbd83214ULL},
    {100, 0xe8ed256df7c36d77ULL, 0x5da4e59606ec0c52ULL},
    {127, 0x1f1c2a3c62829942ULL, 0x5d5820604b01deeaULL},
    {128, 0x11d00b10d6694d31ULL, 0x108fb9e5b83fdff4ULL},
    {129, 0x2d35c46459e9ead8ULL, 0x59a6f805bd0fca54ULL},
    {150, 0x4289ae6878e21994ULL, 0x6b6e1158c84ec61eULL},
    {159, 0x08982a8e20274852ULL, 0x21739edcb6c55094ULL},
    {160, 0xf6b778a5c179adffULL, 0xf27668b26f450ab4ULL},
    {200, 0x6bfc6588f8397554ULL, 0xe3706db480814454ULL},
    {255, 0x217ad8cf08bbe4caULL, 0x1a5bb4038d2f32ffULL},
    {256, 0x86696dd596ccf44bULL, 0x9fd9b2b0b79abdaeULL},
    {300, 0xd6306a0c4528ae11ULL, 0x37c2e51cab2517efULL},
    {1000, 0x984b538c7b372373ULL, 0xf6e6cbc56b688720ULL},
  };
  uint8_t data[1000];
  for (int i = 0; i < 1000; i++) data[i] = (uint8_t)(i * 7 + 3);
  for (size_t i = 0; i < CK_ARRAY_LEN(v); i++) {
    ck_city128_t h = ck_cityhash128(data, (size_t)v[i].n);
    if (h.first != v[i].first || h.second != v[i].second)
      fail_msg("length %d: got %016llx %016llx, want %016llx %016llx", v[i].n,
               (unsigned long long)h.first, (unsigned long long)h.second,
               (unsigned long long)v[i].first, (unsigned long long)v[i].second);
  }
}

/* Every frame the server compressed carries the server's checksum: recompute it. */
static void test_cityhash_matches_server_frames(void **state) {
  size_t n;
  uint8_t *s = unhex(HEX_Q1_LZ4, &n);
  /* the Data packets are: type 1, table name "" (0), then frames */
  int frames = 0;
  for (size_t i = 0; i + 2 + 25 < n; i++) {
    if (s[i] != 0x01 || s[i + 1] != 0x00 || s[i + 2 + 16] != CK_CH_METHOD_LZ4) continue;
    const uint8_t *f = s + i + 2;
    uint32_t csize = (uint32_t)ck_get_le_n(f + 17, 4);
    if (i + 2 + 16 + csize > n) continue;
    ck_city128_t h = ck_cityhash128(f + 16, csize);
    assert_int_equal(h.first, ck_get_le_n(f, 8));
    assert_int_equal(h.second, ck_get_le_n(f + 8, 8));
    frames++;
    i += 16 + csize;
  }
  assert_true(frames >= 2); /* the header block and the data block */
  ck_free(s);
}

/* ============================================================ compression ====== */

static void test_lz4_framing_round_trips(void **state) {
  size_t sizes[] = {0, 1, 100, 70000, 3 * CK_CH_MAX_FRAME_INPUT + 17};
  int methods[] = {CK_CH_METHOD_LZ4, CK_CH_METHOD_NONE};
  for (size_t si = 0; si < CK_ARRAY_LEN(sizes); si++)
    for (int mi = 0; mi < 2; mi++) {
      size_t len = sizes[si];
      uint8_t *data = ck_malloc(len + 1);
      for (size_t i = 0; i < len; i++) data[i] = (uint8_t)((i % 251) ^ (i / 1000));
      ck_buf_t z, back;
      ck_buf_init(&z);
      ck_buf_init(&back);
      ck_ch_compress(data, len, methods[mi], &z);
      /* header of the first frame */
      assert_int_equal((uint8_t)z.data[16], methods[mi]);
      uint32_t usize = (uint32_t)ck_get_le_n((uint8_t *)z.data + 21, 4);
      assert_int_equal(usize, len < CK_CH_MAX_FRAME_INPUT ? len : CK_CH_MAX_FRAME_INPUT);
      size_t pos = 0;
      int frames = 0;
      while (pos < z.len) {
        size_t used, need;
        ck_error_t err = {0};
        int rc = ck_ch_frame_decode((uint8_t *)z.data + pos, z.len - pos, 1u << 30, &back, &used,
                                    &need, &err);
        if (rc) fail_msg("frame %d: %s", frames, err.message);
        pos += used;
        frames++;
      }
      assert_int_equal(frames, len ? (len + CK_CH_MAX_FRAME_INPUT - 1) / CK_CH_MAX_FRAME_INPUT : 1);
      assert_int_equal(back.len, len);
      assert_memory_equal(back.data ? back.data : "", data, len);
      if (methods[mi] == CK_CH_METHOD_LZ4 && len == 70000) assert_true(z.len < len / 2);
      ck_buf_fini(&z);
      ck_buf_fini(&back);
      ck_free(data);
    }
}

/* A ZSTD frame as a 26.x server sends one (method 0x90, sizes with the 9-byte header, a
 * CityHash128 checksum over header and payload), made here with libzstd: it decodes to the
 * bytes compressed, at a ratio above LZ4's 255x bound, and a corrupted payload is refused. */
static void test_zstd_frames_from_the_server_decode(void **state) {
  size_t len = 200000;
  uint8_t *data = ck_malloc(len);
  for (size_t i = 0; i < len; i++) data[i] = (uint8_t)(i < 100 ? i : 'x');
  size_t bound = ZSTD_compressBound(len);
  uint8_t *frame = ck_malloc(16 + 9 + bound);
  size_t payload = ZSTD_compress(frame + 25, bound, data, len, 3);
  assert_false(ZSTD_isError(payload));
  assert_true(len > payload * 255 + 16); /* beyond what an LZ4 frame may claim */
  uint32_t csize = (uint32_t)(payload + 9), usize = (uint32_t)len;
  frame[16] = CK_CH_METHOD_ZSTD;
  for (int i = 0; i < 4; i++) {
    frame[17 + i] = (uint8_t)(csize >> (8 * i));
    frame[21 + i] = (uint8_t)(usize >> (8 * i));
  }
  ck_city128_t h = ck_cityhash128(frame + 16, csize);
  for (int i = 0; i < 8; i++) {
    frame[i] = (uint8_t)(h.first >> (8 * i));
    frame[8 + i] = (uint8_t)(h.second >> (8 * i));
  }
  ck_buf_t out;
  ck_buf_init(&out);
  size_t used = 0, need = 0;
  ck_error_t err = {0};
  int rc = ck_ch_frame_decode(frame, 16 + csize, 1u << 20, &out, &used, &need, &err);
  if (rc) fail_msg("zstd frame: %s", err.message);
  assert_int_equal(used, 16 + csize);
  assert_int_equal(out.len, len);
  assert_memory_equal(out.data, data, len);
  /* the same frame claiming more output than the limit is refused */
  assert_int_equal(ck_ch_frame_decode(frame, 16 + csize, 1000, &out, &used, &need, &err), CK_EPROTO);
  /* a payload that is not ZSTD (checksum recomputed, so only the codec can tell) */
  memset(frame + 25, 0xab, payload);
  h = ck_cityhash128(frame + 16, csize);
  for (int i = 0; i < 8; i++) {
    frame[i] = (uint8_t)(h.first >> (8 * i));
    frame[8 + i] = (uint8_t)(h.second >> (8 * i));
  }
  ck_error_t err2 = {0};
  assert_int_equal(ck_ch_frame_decode(frame, 16 + csize, 1u << 20, &out, &used, &need, &err2),
                   CK_EPROTO);
  assert_non_null(strstr(err2.message, "ZSTD"));
  ck_buf_fini(&out);
  ck_free(frame);
  ck_free(data);
}

static void test_frame_decode_needs_whole_frame_and_checks_it(void **state) {
  const char *text = "the quick brown fox jumps over the lazy dog, the quick brown fox";
  ck_buf_t z, out;
  ck_buf_init(&z);
  ck_buf_init(&out);
  ck_ch_compress(text, strlen(text), CK_CH_METHOD_LZ4, &z);
  for (size_t k = 0; k < z.len; k++) {
    size_t used = 0, need = 0;
    ck_error_t err = {0};
    assert_int_equal(ck_ch_frame_decode((uint8_t *)z.data, k, 1u << 20, &out, &used, &need, &err), 1);
    assert_int_equal(out.len, 0);
    if (k >= 25) assert_int_equal(need, z.len);
  }
  /* one flipped bit anywhere after the checksum is caught */
  for (size_t k = 16; k < z.len; k += 3) {
    ck_buf_t bad;
    ck_buf_init(&bad);
    ck_buf_append(&bad, z.data, z.len);
    bad.data[k] ^= 0x10;
    size_t used, need;
    ck_error_t err = {0};
    int rc = ck_ch_frame_decode((uint8_t *)bad.data, bad.len, 1u << 20, &out, &used, &need, &err);
    if (rc == 1) { /* the size field grew: the frame now looks longer */
      ck_buf_fini(&bad);
      continue;
    }
    assert_int_equal(rc, CK_EPROTO);
    ck_buf_fini(&bad);
  }
  /* a frame claiming more output than the limit is refused before anything is allocated */
  size_t used, need;
  ck_error_t err = {0};
  assert_int_equal(ck_ch_frame_decode((uint8_t *)z.data, z.len, 10, &out, &used, &need, &err), CK_EPROTO);
  assert_non_null(strstr(err.message, "limit"));
  ck_buf_fini(&z);
  ck_buf_fini(&out);
}

/* ================================================================= types ====== */

static void test_type_names_parse(void **state) {
  struct {
    const char *text;
    ck_ch_base_t base;
    bool nullable, lowcard;
    uint32_t n, scale;
    size_t width;
  } ok[] = {
      {"Int8", CK_CH_INT8, 0, 0, 0, 0, 1},
      {"UInt64", CK_CH_UINT64, 0, 0, 0, 0, 8},
      {"Float32", CK_CH_FLOAT32, 0, 0, 0, 0, 4},
      {"String", CK_CH_STRING, 0, 0, 0, 0, 0},
      {"FixedString(16)", CK_CH_FIXEDSTRING, 0, 0, 16, 0, 16},
      {"Date", CK_CH_DATE, 0, 0, 0, 0, 2},
      {"DateTime", CK_CH_DATETIME, 0, 0, 0, 0, 4},
      {"DateTime('Europe/Moscow')", CK_CH_DATETIME, 0, 0, 0, 0, 4},
      {"DateTime64(3)", CK_CH_DATETIME64, 0, 0, 3, 0, 8},
      {"DateTime64(6, 'UTC')", CK_CH_DATETIME64, 0, 0, 6, 0, 8},
      {"Decimal(9, 2)", CK_CH_DECIMAL, 0, 0, 9, 2, 4},
      {"Decimal(18,4)", CK_CH_DECIMAL, 0, 0, 18, 4, 8},
      {"Decimal(38, 10)", CK_CH_DECIMAL, 0, 0, 38, 10, 16},
      {"Decimal64(3)", CK_CH_DECIMAL, 0, 0, 18, 3, 8},
      {"Nullable(Int32)", CK_CH_INT32, 1, 0, 0, 0, 4},
      {"LowCardinality(String)", CK_CH_STRING, 0, 1, 0, 0, 0},
      {"LowCardinality(Nullable(String))", CK_CH_STRING, 1, 1, 0, 0, 0},
      {" Nullable( Decimal(10, 0) ) ", CK_CH_DECIMAL, 1, 0, 10, 0, 8},
      {"Enum8('a' = 1, 'b' = 2)", CK_CH_ENUM8, 0, 0, 0, 0, 1},
      {"UUID", CK_CH_UUID, 0, 0, 0, 0, 16},
      {"Nullable(Nothing)", CK_CH_NOTHING, 1, 0, 0, 0, 1},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(ok); i++) {
    ck_ch_type_t t;
    char why[160] = "";
    if (ck_ch_type_parse(ok[i].text, strlen(ok[i].text), &t, why, sizeof why))
      fail_msg("'%s' refused: %s", ok[i].text, why);
    assert_int_equal(t.base, ok[i].base);
    assert_int_equal(t.nullable, ok[i].nullable);
    assert_int_equal(t.lowcard, ok[i].lowcard);
    assert_int_equal(t.n, ok[i].n);
    assert_int_equal(t.scale, ok[i].scale);
    assert_int_equal(ck_ch_type_width(&t), ok[i].width);
  }
  struct {
    const char *text, *why;
  } bad[] = {
      {"Array(String)", "composite"},
      {"Tuple(Int8, String)", "composite"},
      {"Decimal(76, 2)", "Decimal256"},
      {"Nullable(LowCardinality(String))", "nested"},
      {"Nullable(Nullable(Int8))", "nested"},
      {"FixedString(0)", "malformed"},
      {"FixedString(x)", "malformed"},
      {"Int8(3)", "malformed"},
      {"DateTime64(12)", "malformed"},
      {"Decimal(5, 7)", "malformed"},
      {"IntervalSecond", "not a type"},
      {"Nullable(String", "malformed"},
      {"", "malformed"},
  };
  for (size_t i = 0; i < CK_ARRAY_LEN(bad); i++) {
    ck_ch_type_t t;
    char why[160] = "";
    if (!ck_ch_type_parse(bad[i].text, strlen(bad[i].text), &t, why, sizeof why))
      fail_msg("'%s' accepted", bad[i].text);
    if (!strstr(why, bad[i].why)) fail_msg("'%s': reason '%s' lacks '%s'", bad[i].text, why, bad[i].why);
  }
}

/* ================================================================ reader ====== */

static void check_q1_block(const ck_ch_block_t *b) {
  assert_int_equal(b->rows, 3);
  assert_int_equal(b->ncols, 19);
  for (size_t r = 0; r < 3; r++) {
    assert_int_equal(ck_ch_col_int(col(b, "i8"), r), -128);
    assert_int_equal(ck_ch_col_int(col(b, "i16"), r), -32768);
    assert_int_equal(ck_ch_col_int(col(b, "i32"), r), INT32_MIN);
    assert_int_equal(ck_ch_col_int(col(b, "i64"), r), INT64_MIN);
    assert_int_equal(ck_ch_col_int(col(b, "u8"), r), 255);
    assert_int_equal(ck_ch_col_int(col(b, "u16"), r), 65535);
    assert_int_equal(ck_ch_col_int(col(b, "u32"), r), 4294967295LL);
    assert_int_equal((uint64_t)ck_ch_col_int(col(b, "u64"), r), UINT64_MAX);
    float f;
    memcpy(&f, ck_ch_col_fixed(col(b, "f32"), r), 4);
    assert_true(f == 1.5f);
    double d;
    memcpy(&d, ck_ch_col_fixed(col(b, "f64"), r), 8);
    assert_true(d == -2.25);
    size_t n;
    const char *fs = ck_ch_col_str(col(b, "fs"), r, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(fs, "ab\0", 3);
    assert_int_equal(ck_ch_col_int(col(b, "d"), r), 17000);
    assert_int_equal(ck_ch_col_int(col(b, "dt"), r), 1700000000);
    assert_i128(ck_ch_col_i128(col(b, "d32"), r), "-123456");
    assert_i128(ck_ch_col_i128(col(b, "d64"), r), "1234567890123");
    assert_i128(ck_ch_col_i128(col(b, "d128"), r), "-12345678901234567890123456789");
  }
  assert_str(col(b, "s"), 0, "h\xc3\xa9llo");
  assert_str(col(b, "s"), 1, "");
  assert_str(col(b, "s"), 2, "a\nb");
  const ck_ch_col_t *ns = col(b, "ns"), *ni = col(b, "ni");
  assert_true(ns->type.nullable && !ck_ch_col_is_null(ns, 0) && ck_ch_col_is_null(ns, 1) &&
              !ck_ch_col_is_null(ns, 2));
  assert_str(ns, 0, "h\xc3\xa9llo");
  assert_str(ns, 2, "a\nb");
  assert_true(ck_ch_col_is_null(ni, 0) && !ck_ch_col_is_null(ni, 1) && !ck_ch_col_is_null(ni, 2));
  assert_int_equal(ck_ch_col_int(ni, 1), 0);
  assert_int_equal(ck_ch_col_int(ni, 2), 3);
  assert_string_equal(col(b, "d128")->type_name, "Decimal(38, 9)");
  assert_string_equal(col(b, "ns")->type_name, "Nullable(String)");
}

static void test_reader_decodes_server_result_of_every_type(void **state) {
  const char *streams[] = {HEX_Q1_PLAIN, HEX_Q1_LZ4};
  for (int k = 0; k < 2; k++) {
    size_t n;
    uint8_t *s = unhex(streams[k], &n);
    decoded_t d;
    decode_stream(s, n, 54412, k == 1, 0, &d);
    assert_int_equal(d.nblocks, 1);
    check_q1_block(&d.first);
    /* header block, the rows, then ProfileInfo / Progress and EndOfStream last */
    assert_int_equal(d.types[0], CK_CH_SERVER_DATA);
    assert_int_equal(d.types[d.npk - 1], CK_CH_SERVER_END_OF_STREAM);
    bool profile = false;
    for (int i = 0; i < d.npk; i++) profile |= d.types[i] == CK_CH_SERVER_PROFILE_INFO;
    assert_true(profile);
    decoded_fini(&d);
    ck_free(s);
  }
}

/* Resumability: the same packets whatever the pieces the bytes arrive in. */
static void test_reader_resumes_byte_by_byte(void **state) {
  const char *streams[] = {HEX_Q1_PLAIN, HEX_Q1_LZ4, HEX_TYPES_PLAIN, HEX_TYPES_LZ4, HEX_AUTH_FAILED};
  bool comp[] = {false, true, false, true, false};
  for (size_t k = 0; k < CK_ARRAY_LEN(streams); k++) {
    size_t n;
    uint8_t *s = unhex(streams[k], &n);
    decoded_t whole, bytes, odd;
    decode_stream(s, n, 54412, comp[k], 0, &whole);
    decode_stream(s, n, 54412, comp[k], 1, &bytes);
    decode_stream(s, n, 54412, comp[k], -1, &odd);
    assert_true(whole.npk >= 1);
    assert_int_equal(bytes.npk, whole.npk);
    assert_int_equal(odd.npk, whole.npk);
    assert_memory_equal(bytes.types, whole.types, sizeof(uint64_t) * (size_t)whole.npk);
    assert_memory_equal(odd.types, whole.types, sizeof(uint64_t) * (size_t)whole.npk);
    assert_int_equal(bytes.blocks.len, whole.blocks.len);
    assert_int_equal(odd.blocks.len, whole.blocks.len);
    if (whole.blocks.len) {
      assert_memory_equal(bytes.blocks.data, whole.blocks.data, whole.blocks.len);
      assert_memory_equal(odd.blocks.data, whole.blocks.data, whole.blocks.len);
    }
    assert_int_equal(bytes.exc_code, whole.exc_code);
    decoded_fini(&whole);
    decoded_fini(&bytes);
    decoded_fini(&odd);
    ck_free(s);
  }
}

/* Our encoder writes exactly the bytes the server wrote for the same columns. */
static void test_encoding_reproduces_server_bytes(void **state) {
  size_t n;
  uint8_t *s = unhex(HEX_Q1_PLAIN, &n);
  ck_ch_reader_t r;
  ck_ch_reader_init(&r, 54412);
  r.revision = 54412;
  ck_ch_reader_feed(&r, s, n);
  bool seen = false;
  for (;;) {
    size_t before = r.pos;
    const ck_ch_packet_t *p;
    ck_error_t err = {0};
    int rc = ck_ch_reader_next(&r, &p, &err);
    if (rc) break;
    if (p->type != CK_CH_SERVER_DATA) continue;
    /* the packet: type (1 byte), table name "" (1 byte), then the block */
    ck_buf_t mine;
    ck_buf_init(&mine);
    ck_ch_block_write(&p->block, 54412, &mine);
    size_t server_len = r.pos - before - 2;
    assert_int_equal(mine.len, server_len);
    assert_memory_equal(mine.data, s + before + 2, server_len);
    seen |= p->block.rows > 0;
    ck_buf_fini(&mine);
  }
  assert_true(seen);
  ck_ch_reader_fini(&r);
  ck_free(s);
}

static void test_reader_decodes_lowcardinality_from_server(void **state) {
  const char *streams[] = {HEX_TYPES_PLAIN, HEX_TYPES_LZ4};
  for (int k = 0; k < 2; k++) {
    size_t n;
    uint8_t *s = unhex(streams[k], &n);
    ck_ch_reader_t r;
    ck_ch_reader_init(&r, 54412);
    r.revision = 54412;
    r.compressed = k == 1;
    ck_ch_reader_feed(&r, s, n);
    int rows = 0, lcn_null = 0, lcn_y = 0;
    for (;;) {
      const ck_ch_packet_t *p;
      ck_error_t err = {0};
      int rc = ck_ch_reader_next(&r, &p, &err);
      if (rc == CK_CH_NEED_MORE) break;
      if (rc) fail_msg("%s", err.message);
      if (p->type != CK_CH_SERVER_DATA || !p->block.rows) continue;
      const ck_ch_col_t *lc = col(&p->block, "lc"), *lcn = col(&p->block, "lcn");
      assert_true(lc->type.lowcard && !lc->type.nullable);
      assert_true(lcn->type.lowcard && lcn->type.nullable);
      for (size_t i = 0; i < p->block.rows; i++, rows++) {
        assert_str(lc, i, "x");
        if (ck_ch_col_is_null(lcn, i)) lcn_null++;
        else assert_str(lcn, i, "y"), lcn_y++;
      }
    }
    assert_int_equal(rows, 2);
    assert_int_equal(lcn_null, 1);
    assert_int_equal(lcn_y, 1);
    ck_ch_reader_fini(&r);
    ck_free(s);
  }
}

static void test_reader_hello_and_exception(void **state) {
  size_t n;
  uint8_t *s = unhex(HEX_HELLO_SELECT1, &n);
  decoded_t d;
  decode_stream(s, n, CK_CH_CLIENT_REVISION, false, 1, &d);
  assert_string_equal(d.hello, "ClickHouse 18.16.1 rev 54412 tz Etc/UTC name vm");
  assert_int_equal(d.types[0], CK_CH_SERVER_HELLO);
  assert_int_equal(d.types[d.npk - 1], CK_CH_SERVER_END_OF_STREAM);
  assert_int_equal(d.nblocks, 1);
  assert_int_equal(ck_ch_col_int(col(&d.first, "x"), 0), 1);
  decoded_fini(&d);
  ck_free(s);
  s = unhex(HEX_AUTH_FAILED, &n);
  decode_stream(s, n, 54412, false, 0, &d);
  assert_int_equal(d.npk, 1);
  assert_int_equal(d.types[0], CK_CH_SERVER_EXCEPTION);
  assert_int_equal(d.exc_code, 193);
  assert_non_null(strstr(d.exc_msg, "Wrong password for user clink"));
  assert_null(strstr(d.exc_msg, "wrongpw")); /* the server does not echo it either */
  decoded_fini(&d);
  ck_free(s);
}

/* Progress and ProfileInfo fields follow the negotiated revision. */
static void test_reader_follows_revision_rules(void **state) {
  for (int pass = 0; pass < 2; pass++) {
    int rev = pass ? 54469 : 54412;
    ck_buf_t b;
    ck_buf_init(&b);
    ck_buf_put_uvarint(&b, CK_CH_SERVER_PROGRESS);
    ck_buf_put_uvarint(&b, 10);  /* read rows */
    ck_buf_put_uvarint(&b, 20);  /* read bytes */
    ck_buf_put_uvarint(&b, 30);  /* total rows */
    if (rev >= CK_CH_REV_TOTAL_BYTES_IN_PROGRESS) ck_buf_put_uvarint(&b, 35);
    if (rev >= CK_CH_REV_CLIENT_WRITE_INFO) {
      ck_buf_put_uvarint(&b, 40); /* written rows */
      ck_buf_put_uvarint(&b, 50); /* written bytes */
    }
    if (rev >= CK_CH_REV_SERVER_QUERY_TIME_IN_PROGRESS) ck_buf_put_uvarint(&b, 60);
    ck_buf_put_uvarint(&b, CK_CH_SERVER_PROFILE_INFO);
    ck_buf_put_uvarint(&b, 1), ck_buf_put_uvarint(&b, 2), ck_buf_put_uvarint(&b, 3);
    ck_buf_put_u8(&b, 1), ck_buf_put_uvarint(&b, 4), ck_buf_put_u8(&b, 1);
    if (rev >= CK_CH_REV_ROWS_BEFORE_AGGREGATION) ck_buf_put_u8(&b, 1), ck_buf_put_uvarint(&b, 5);
    ck_buf_put_uvarint(&b, CK_CH_SERVER_END_OF_STREAM);
    ck_ch_reader_t r;
    ck_ch_reader_init(&r, 54500);
    r.revision = rev;
    for (size_t i = 0; i < b.len; i++) ck_ch_reader_feed(&r, b.data + i, 1);
    const ck_ch_packet_t *p;
    ck_error_t err = {0};
    assert_int_equal(ck_ch_reader_next(&r, &p, &err), 0);
    assert_int_equal(p->type, CK_CH_SERVER_PROGRESS);
    assert_int_equal(p->progress.total_rows, 30);
    assert_int_equal(p->progress.written_rows, pass ? 40 : 0); /* 18.16 (54412) has no write info */
    assert_int_equal(p->progress.total_bytes, pass ? 35 : 0);
    assert_int_equal(p->progress.elapsed_ns, pass ? 60 : 0);
    assert_int_equal(ck_ch_reader_next(&r, &p, &err), 0);
    assert_int_equal(p->type, CK_CH_SERVER_PROFILE_INFO);
    assert_int_equal(p->profile.rows_before_limit, 4);
    assert_int_equal(p->profile.rows_before_aggregation, pass ? 5 : 0);
    assert_int_equal(ck_ch_reader_next(&r, &p, &err), 0);
    assert_int_equal(p->type, CK_CH_SERVER_END_OF_STREAM);
    assert_int_equal(ck_ch_reader_next(&r, &p, &err), CK_CH_NEED_MORE);
    ck_ch_reader_fini(&r);
    ck_buf_fini(&b);
  }
}

/* ===================================================== encode → decode ====== */

static const char *const ALL_TYPES[][2] = {
    {"i8", "Int8"}, {"i16", "Int16"}, {"i32", "Int32"}, {"i64", "Int64"},
    {"u8", "UInt8"}, {"u16", "UInt16"}, {"u32", "UInt32"}, {"u64", "UInt64"},
    {"f32", "Float32"}, {"f64", "Float64"}, {"s", "String"}, {"fs", "FixedString(4)"},
    {"d", "Date"}, {"dt", "DateTime('UTC')"}, {"dt64", "DateTime64(3)"},
    {"d32", "Decimal(9, 2)"}, {"d64", "Decimal(18, 6)"}, {"d128", "Decimal(38, 12)"},
    {"ns", "Nullable(String)"}, {"ni", "Nullable(Int64)"}, {"nd", "Nullable(Decimal(20, 2))"},
    {"lc", "LowCardinality(String)"}, {"lcn", "LowCardinality(Nullable(String))"},
    {"nfs", "Nullable(FixedString(2))"},
};
#define NTYPES ((int)CK_ARRAY_LEN(ALL_TYPES))

/* Row i's values, edge values on the first rows; every 7th nullable value NULL. */
static void fill(ck_ch_block_t *b, size_t rows) {
  for (size_t i = 0; i < rows; i++) {
    int64_t k = (int64_t)i;
    for (int c = 0; c < NTYPES; c++) {
      ck_ch_col_t *cl = &b->cols[c];
      if (cl->type.nullable && i % 7 == 3) {
        ck_ch_col_put_null(cl);
        continue;
      }
      switch (cl->type.base) {
        case CK_CH_INT8: ck_ch_col_put_bits(cl, (uint64_t)(i == 0 ? INT8_MIN : i == 1 ? INT8_MAX : k % 100 - 50)); break;
        case CK_CH_INT16: ck_ch_col_put_bits(cl, (uint64_t)(i == 0 ? INT16_MIN : i == 1 ? INT16_MAX : k * 3)); break;
        case CK_CH_INT32: ck_ch_col_put_bits(cl, (uint64_t)(i == 0 ? INT32_MIN : i == 1 ? INT32_MAX : -k)); break;
        case CK_CH_INT64: ck_ch_col_put_bits(cl, (uint64_t)(i == 0 ? INT64_MIN : i == 1 ? INT64_MAX : k * 1000003)); break;
        case CK_CH_UINT8: ck_ch_col_put_bits(cl, i == 1 ? UINT8_MAX : (uint64_t)k % 200); break;
        case CK_CH_UINT16: ck_ch_col_put_bits(cl, i == 1 ? UINT16_MAX : (uint64_t)k); break;
        case CK_CH_UINT32: ck_ch_col_put_bits(cl, i == 1 ? UINT32_MAX : (uint64_t)k * 7); break;
        case CK_CH_UINT64: ck_ch_col_put_bits(cl, i == 1 ? UINT64_MAX : (uint64_t)k << 40); break;
        case CK_CH_FLOAT32: ck_ch_col_put_f32(cl, i == 1 ? -0.0f : (float)k / 4); break;
        case CK_CH_FLOAT64: ck_ch_col_put_f64(cl, i == 0 ? 1e308 : i == 1 ? 5e-324 : (double)k / 3); break;
        case CK_CH_DATE: ck_ch_col_put_bits(cl, i == 1 ? 65535 : (uint64_t)k); break;
        case CK_CH_DATETIME: ck_ch_col_put_bits(cl, i == 1 ? UINT32_MAX : (uint64_t)k * 86400); break;
        case CK_CH_DATETIME64: ck_ch_col_put_bits(cl, (uint64_t)(k * 1000 - 5)); break;
        case CK_CH_DECIMAL: {
          __int128 v = i == 0 ? -(ck_pow10_i128((int)cl->type.n) - 1) : i == 1 ? ck_pow10_i128((int)cl->type.n) - 1 : (__int128)k * 12345;
          uint8_t le[16];
          for (int j = 0; j < 16; j++) le[j] = (uint8_t)((unsigned __int128)v >> (8 * j));
          ck_ch_col_put_wide(cl, le, ck_ch_type_width(&cl->type));
          break;
        }
        case CK_CH_STRING:
        case CK_CH_FIXEDSTRING: {
          char tmp[32];
          int len;
          if (cl->type.lowcard) len = snprintf(tmp, sizeof tmp, "k%d", (int)(i % 300)); /* > 256 keys */
          else if (i == 0) len = 0;
          else if (i == 1) len = snprintf(tmp, sizeof tmp, "%s", "\xe2\x9c\x93\xc3\xa9\x00x");
          else len = snprintf(tmp, sizeof tmp, "v%lld", (long long)k);
          if (i == 1) len = 7;
          size_t cap = cl->type.base == CK_CH_FIXEDSTRING ? cl->type.n : sizeof tmp;
          ck_ch_col_put_str(cl, tmp, (size_t)len < cap ? (size_t)len : cap);
          break;
        }
        default: fail_msg("type %d", cl->type.base);
      }
    }
  }
  ck_ch_block_seal(b);
}

static void assert_blocks_equal(const ck_ch_block_t *a, const ck_ch_block_t *b) {
  assert_int_equal(a->ncols, b->ncols);
  assert_int_equal(a->rows, b->rows);
  for (int c = 0; c < a->ncols; c++) {
    const ck_ch_col_t *x = &a->cols[c], *y = &b->cols[c];
    assert_string_equal(x->name, y->name);
    assert_string_equal(x->type_name, y->type_name);
    for (size_t i = 0; i < a->rows; i++) {
      assert_int_equal(ck_ch_col_is_null(x, i), ck_ch_col_is_null(y, i));
      if (ck_ch_col_is_null(x, i)) continue;
      size_t n1, n2;
      const char *s1 = ck_ch_col_str(x, i, &n1), *s2 = ck_ch_col_str(y, i, &n2);
      if (n1 != n2 || memcmp(s1, s2, n1)) fail_msg("column %s row %zu differs", x->name, i);
    }
  }
}

static void test_every_type_round_trips(void **state) {
  int revs[] = {54412, CK_CH_CLIENT_REVISION};
  size_t row_counts[] = {1, 2, 9, 700};
  for (int ri = 0; ri < 2; ri++)
    for (size_t rc_i = 0; rc_i < CK_ARRAY_LEN(row_counts); rc_i++)
      for (int comp = 0; comp < 2; comp++) {
        ck_ch_block_t b;
        ck_ch_block_init(&b);
        for (int c = 0; c < NTYPES; c++)
          assert_int_equal(ck_ch_block_add_col(&b, ALL_TYPES[c][0], ALL_TYPES[c][1], NULL), c);
        fill(&b, row_counts[rc_i]);
        /* a Data packet as the server would send it */
        ck_buf_t pkt, raw;
        ck_buf_init(&pkt);
        ck_buf_init(&raw);
        ck_buf_put_uvarint(&pkt, CK_CH_SERVER_DATA);
        ck_ch_put_cstr(&pkt, "");
        ck_ch_block_write(&b, revs[ri], &raw);
        if (comp) ck_ch_compress(raw.data, raw.len, CK_CH_METHOD_LZ4, &pkt);
        else ck_buf_append(&pkt, raw.data, raw.len);
        for (int feed = 0; feed < 2; feed++) {
          ck_ch_reader_t r;
          ck_ch_reader_init(&r, revs[ri]);
          r.compressed = comp;
          const ck_ch_packet_t *p = NULL;
          ck_error_t err = {0};
          int rc = CK_CH_NEED_MORE;
          if (feed == 0) {
            ck_ch_reader_feed(&r, pkt.data, pkt.len);
            rc = ck_ch_reader_next(&r, &p, &err);
          } else {
            for (size_t i = 0; i < pkt.len && rc == CK_CH_NEED_MORE; i++) {
              ck_ch_reader_feed(&r, pkt.data + i, 1);
              rc = ck_ch_reader_next(&r, &p, &err);
              if (rc == 0) assert_int_equal(i, pkt.len - 1);
            }
          }
          if (rc) fail_msg("rev %d rows %zu comp %d: %d %s", revs[ri], row_counts[rc_i], comp, rc, err.message);
          assert_blocks_equal(&p->block, &b);
          ck_ch_reader_fini(&r);
        }
        /* a LowCardinality column over 256 keys needs 16-bit indexes */
        if (row_counts[rc_i] == 700 && !comp) {
          const char *flags_at = memmem(raw.data, raw.len, "\x01\0\0\0\0\0\0\0\x01\x02\0\0\0\0\0\0", 16);
          assert_non_null(flags_at);
        }
        ck_buf_fini(&pkt);
        ck_buf_fini(&raw);
        ck_ch_block_fini(&b);
      }
}

/* ============================================================== bad input ====== */

static int feed_all(const void *data, size_t n, bool compressed, ck_error_t *err) {
  ck_ch_reader_t r;
  ck_ch_reader_init(&r, 54412);
  r.compressed = compressed;
  ck_ch_reader_feed(&r, data, n);
  int rc;
  const ck_ch_packet_t *p;
  while ((rc = ck_ch_reader_next(&r, &p, err)) == 0) {}
  if (rc < 0) { /* sticky */
    ck_error_t again = {0};
    assert_int_equal(ck_ch_reader_next(&r, &p, &again), rc);
  }
  ck_ch_reader_fini(&r);
  return rc;
}

static void test_reader_refuses_malformed_input(void **state) {
  ck_error_t err = {0};
  /* an unknown packet type */
  assert_int_equal(feed_all("\x63", 1, false, &err), CK_EPROTO);
  assert_non_null(strstr(err.message, "unexpected packet"));
  /* an 11-byte varint */
  ck_error_clear(&err);
  assert_int_equal(feed_all("\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, false, &err), CK_EPROTO);
  /* a LowCardinality index past its dictionary */
  ck_ch_block_t b;
  ck_ch_block_init(&b);
  ck_ch_block_add_col(&b, "lc", "LowCardinality(String)", NULL);
  ck_ch_col_put_str(&b.cols[0], "a", 1);
  ck_ch_block_seal(&b);
  ck_buf_t pkt;
  ck_buf_init(&pkt);
  ck_buf_put_uvarint(&pkt, CK_CH_SERVER_DATA);
  ck_ch_put_cstr(&pkt, "");
  ck_ch_block_write(&b, 54412, &pkt);
  pkt.data[pkt.len - 1] = 5; /* the one index: 5, with one key */
  ck_error_clear(&err);
  assert_int_equal(feed_all(pkt.data, pkt.len, false, &err), CK_EPROTO);
  assert_non_null(strstr(err.message, "LowCardinality index"));
  /* a corrupted compressed frame */
  ck_buf_t z;
  ck_buf_init(&z);
  ck_buf_put_uvarint(&z, CK_CH_SERVER_DATA);
  ck_ch_put_cstr(&z, "");
  size_t at = z.len;
  ck_ch_compress(pkt.data + 2, pkt.len - 2, CK_CH_METHOD_LZ4, &z);
  z.data[at + 3] ^= 1; /* in the checksum */
  ck_error_clear(&err);
  assert_int_equal(feed_all(z.data, z.len, true, &err), CK_EPROTO);
  assert_non_null(strstr(err.message, "checksum"));
  /* a column type this client does not read */
  ck_buf_t a;
  ck_buf_init(&a);
  ck_buf_put_uvarint(&a, CK_CH_SERVER_DATA);
  ck_ch_put_cstr(&a, "");
  ck_buf_put_uvarint(&a, 0); /* block info ends at once */
  ck_buf_put_uvarint(&a, 1);
  ck_buf_put_uvarint(&a, 1);
  ck_ch_put_cstr(&a, "arr");
  ck_ch_put_cstr(&a, "Array(UInt8)");
  ck_error_clear(&err);
  assert_int_equal(feed_all(a.data, a.len, false, &err), CK_EPROTO);
  assert_non_null(strstr(err.message, "Array"));
  /* a string that claims 2 GiB is refused before it arrives */
  ck_buf_t big;
  ck_buf_init(&big);
  ck_buf_put_uvarint(&big, CK_CH_SERVER_TABLE_COLUMNS);
  ck_buf_put_uvarint(&big, (uint64_t)1 << 31);
  ck_error_clear(&err);
  assert_int_equal(feed_all(big.data, big.len, false, &err), CK_EPROTO);
  ck_buf_fini(&big);
  ck_buf_fini(&a);
  ck_buf_fini(&z);
  ck_buf_fini(&pkt);
  ck_ch_block_fini(&b);
}

/* ============================================================ sink rules ====== */

static void expect_rule(const char *sql_spec, const char *ch_type, bool checked, const char *want_err) {
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  char spec[128];
  snprintf(spec, sizeof spec, "v %s", sql_spec);
  ck_schema_t s = t_schema(&arena, spec);
  const char *names[] = {"id", "v"}, *types[] = {"Int64", ch_type}, *kinds[] = {"", ""};
  ck_error_t err = {0};
  int rc = ck_ch_sink_check_columns(&s, 2, names, types, kinds, checked, &err);
  if (!want_err && rc) fail_msg("%s into %s refused: %s", sql_spec, ch_type, err.message);
  if (want_err) {
    if (!rc) fail_msg("%s into %s accepted", sql_spec, ch_type);
    if (!strstr(err.message, want_err)) fail_msg("%s into %s: '%s' lacks '%s'", sql_spec, ch_type, err.message, want_err);
  }
  ck_arena_fini(&arena);
}

static void test_sink_type_rules(void **state) {
  /* accepted */
  expect_rule("BIGINT", "Int64", false, NULL);
  expect_rule("BIGINT", "Nullable(Int64)", false, NULL);
  expect_rule("INT", "Int64", false, NULL);
  expect_rule("INT", "Float64", false, NULL);
  expect_rule("INT", "Decimal(10, 0)", false, NULL);
  expect_rule("BOOLEAN", "UInt8", false, NULL);
  expect_rule("BOOLEAN", "Int8", false, NULL);
  expect_rule("FLOAT", "Float64", false, NULL);
  expect_rule("DOUBLE", "Float64", false, NULL);
  expect_rule("DECIMAL(10,2)", "Decimal(12, 4)", false, NULL);
  expect_rule("DECIMAL(18,0)", "Int64", false, NULL);
  expect_rule("VARCHAR", "String", false, NULL);
  expect_rule("VARCHAR", "FixedString(8)", false, NULL);
  expect_rule("VARCHAR", "LowCardinality(Nullable(String))", false, NULL);
  expect_rule("TIMESTAMP", "DateTime64(3)", false, NULL);
  expect_rule("TIMESTAMP", "DateTime64(6, 'UTC')", false, NULL);
  expect_rule("TIMESTAMP", "Int64", false, NULL);
  expect_rule("INT", "Date", false, NULL);
  expect_rule("BIGINT", "DateTime", false, NULL);
  expect_rule("INT", "Int8", true, NULL);
  expect_rule("BIGINT", "UInt64", true, NULL);
  /* refused, both types named */
  expect_rule("VARCHAR", "Int32", false, "VARCHAR column 'v' into column 'v' of ClickHouse table `default`.`t`, which is Int32");
  expect_rule("DOUBLE", "Int64", false, "DOUBLE column 'v'");
  expect_rule("BIGINT", "Int32", false, "which is Int32: it cannot hold every value");
  expect_rule("BIGINT", "UInt64", false, "which is UInt64");
  expect_rule("INT", "UInt32", false, "which is UInt32");
  expect_rule("BIGINT", "Float64", false, "cannot hold every BIGINT exactly");
  expect_rule("DOUBLE", "Float32", false, "Float32");
  expect_rule("DECIMAL(10,2)", "Decimal(10, 4)", false, "integer digits");
  expect_rule("DECIMAL(10,4)", "Decimal(12, 2)", false, "fraction digits");
  expect_rule("TIMESTAMP", "DateTime", false, "milliseconds");
  expect_rule("TIMESTAMP", "Date", false, "milliseconds");
  expect_rule("TIMESTAMP", "DateTime64(0)", false, "milliseconds");
  expect_rule("VARCHAR", "Array(String)", false, "composite");
  expect_rule("VARCHAR", "UUID", false, NULL);
  expect_rule("BIGINT", "UUID", false, "only VARCHAR");
  expect_rule("DOUBLE", "String", false, "only VARCHAR");
  expect_rule("TIMESTAMP", "Int32", true, NULL); /* checked: range-checked per value */
  /* an unknown column, with a hint; a MATERIALIZED one */
  ck_arena_t arena;
  ck_arena_init(&arena, 4096);
  ck_schema_t s = t_schema(&arena, "valeu BIGINT");
  const char *names[] = {"id", "value"}, *types[] = {"Int64", "Int64"}, *kinds[] = {"", "MATERIALIZED"};
  ck_error_t err = {0};
  assert_int_equal(ck_ch_sink_check_columns(&s, 2, names, types, kinds, false, &err), CK_EBIND);
  assert_non_null(strstr(err.message, "has no column 'valeu'"));
  assert_non_null(strstr(err.hint, "did you mean 'value'"));
  s = t_schema(&arena, "VALUE BIGINT");
  ck_error_clear(&err);
  assert_int_equal(ck_ch_sink_check_columns(&s, 2, names, types, kinds, false, &err), CK_EBIND);
  assert_non_null(strstr(err.message, "MATERIALIZED"));
  ck_arena_fini(&arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cityhash_matches_reference_vectors),
      cmocka_unit_test(test_cityhash_matches_server_frames),
      cmocka_unit_test(test_lz4_framing_round_trips),
      cmocka_unit_test(test_frame_decode_needs_whole_frame_and_checks_it),
      cmocka_unit_test(test_zstd_frames_from_the_server_decode),
      cmocka_unit_test(test_type_names_parse),
      cmocka_unit_test(test_reader_decodes_server_result_of_every_type),
      cmocka_unit_test(test_reader_resumes_byte_by_byte),
      cmocka_unit_test(test_encoding_reproduces_server_bytes),
      cmocka_unit_test(test_reader_decodes_lowcardinality_from_server),
      cmocka_unit_test(test_reader_hello_and_exception),
      cmocka_unit_test(test_reader_follows_revision_rules),
      cmocka_unit_test(test_every_type_round_trips),
      cmocka_unit_test(test_reader_refuses_malformed_input),
      cmocka_unit_test(test_sink_type_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
