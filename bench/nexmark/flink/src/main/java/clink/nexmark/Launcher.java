/*
 * DESIGN: the Flink side of bench/nexmark/compare.sh — runs one SQL script on a local
 * MiniCluster inside this JVM and exits when the (bounded) job is done.
 *
 *   java -cp <launcher jar>:<lib>/* clink.nexmark.Launcher --sql FILE [--parallelism N]
 *        [--output FILE]
 *
 * The script is Flink SQL: statements separated by ';' at the end of a line ('--' comment
 * lines are dropped). Every statement but the last is executed as is (CREATE TABLE / VIEW).
 * The last is an INSERT INTO <sink> SELECT ...:
 *   - without --output, it runs as written (the sink is 'blackhole': the measurement run);
 *   - with --output, its SELECT is collected instead and written to FILE as one JSON object per
 *     row, keyed by the query's column names, with "op" (insert, update_before, update, delete)
 *     from the row kind — the correctness run. TIMESTAMP values are written as epoch
 *     milliseconds (the session time zone is UTC), DECIMAL values as plain numbers.
 *
 * Configuration (the same on every run; compare.sh passes the same parallelism to clink):
 * streaming mode, parallelism.default = --parallelism, table.local-time-zone = UTC,
 * checkpointing off (Flink's default), everything else at Flink's defaults (hash-map state
 * backend, no mini-batch, no object reuse). Heap size is the JVM's -Xmx, set by compare.sh.
 *
 * Threads: main only; Flink's MiniCluster brings its own.
 */
package clink.nexmark;

import java.io.BufferedWriter;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

public final class Launcher {
  private static final Pattern INSERT =
      Pattern.compile("^\\s*INSERT\\s+INTO\\s+\\S+\\s+(SELECT\\b.*)$",
                      Pattern.CASE_INSENSITIVE | Pattern.DOTALL);

  public static void main(String[] args) throws Exception {
    String sqlFile = null, output = null;
    int parallelism = 1;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--sql": sqlFile = args[++i]; break;
        case "--output": output = args[++i]; break;
        case "--parallelism": parallelism = Integer.parseInt(args[++i]); break;
        default:
          System.err.println("usage: Launcher --sql FILE [--parallelism N] [--output FILE]");
          System.exit(2);
      }
    }
    if (sqlFile == null) {
      System.err.println("usage: Launcher --sql FILE [--parallelism N] [--output FILE]");
      System.exit(2);
    }
    List<String> statements = split(new String(Files.readAllBytes(Paths.get(sqlFile)),
                                               StandardCharsets.UTF_8));
    if (statements.isEmpty()) throw new IllegalArgumentException(sqlFile + " has no statement");

    Configuration conf = new Configuration();
    conf.setString("parallelism.default", Integer.toString(parallelism));
    conf.setString("table.local-time-zone", "UTC");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(conf);
    StreamTableEnvironment tEnv =
        StreamTableEnvironment.create(env, EnvironmentSettings.newInstance().inStreamingMode()
                                              .withConfiguration(conf).build());
    for (int i = 0; i < statements.size() - 1; i++) tEnv.executeSql(statements.get(i));
    String last = statements.get(statements.size() - 1);
    if (output == null) {
      tEnv.executeSql(last).await();
      return;
    }
    Matcher m = INSERT.matcher(last);
    if (!m.matches())
      throw new IllegalArgumentException("the last statement must be INSERT INTO <sink> SELECT");
    Table table = tEnv.sqlQuery(m.group(1));
    List<String> names = table.getResolvedSchema().getColumnNames();
    TableResult result = table.execute();
    try (CloseableIterator<Row> rows = result.collect();
         BufferedWriter out = Files.newBufferedWriter(Paths.get(output), StandardCharsets.UTF_8)) {
      StringBuilder sb = new StringBuilder();
      while (rows.hasNext()) {
        Row row = rows.next();
        sb.setLength(0);
        sb.append('{');
        for (int c = 0; c < names.size(); c++) {
          string(sb, names.get(c));
          sb.append(':');
          value(sb, row.getField(c));
          sb.append(',');
        }
        sb.append("\"op\":\"").append(op(row.getKind())).append("\"}\n");
        out.write(sb.toString());
        out.flush(); /* so compare.sh sees the first row as soon as it exists */
      }
    }
  }

  /* Statements end with ';' at the end of a line; '--' comment lines are dropped. */
  static List<String> split(String text) {
    List<String> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    for (String line : text.split("\n")) {
      String t = line.trim();
      if (t.startsWith("--") || t.isEmpty()) continue;
      if (t.endsWith(";")) {
        cur.append(line, 0, line.lastIndexOf(';'));
        out.add(cur.toString());
        cur.setLength(0);
      } else {
        cur.append(line).append('\n');
      }
    }
    if (cur.toString().trim().length() > 0) out.add(cur.toString());
    return out;
  }

  static String op(RowKind kind) {
    switch (kind) {
      case INSERT: return "insert";
      case UPDATE_BEFORE: return "update_before";
      case UPDATE_AFTER: return "update";
      default: return "delete";
    }
  }

  static void value(StringBuilder sb, Object v) {
    if (v == null) sb.append("null");
    else if (v instanceof String) string(sb, (String) v);
    else if (v instanceof BigDecimal) sb.append(((BigDecimal) v).toPlainString());
    else if (v instanceof LocalDateTime)
      sb.append(((LocalDateTime) v).toInstant(ZoneOffset.UTC).toEpochMilli());
    else if (v instanceof Instant) sb.append(((Instant) v).toEpochMilli());
    else if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      sb.append(Double.isFinite(d) ? Double.toString(d) : "null");
    } else sb.append(v.toString()); /* integers, booleans */
  }

  static void string(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
      else if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
      else sb.append(ch);
    }
    sb.append('"');
  }
}
