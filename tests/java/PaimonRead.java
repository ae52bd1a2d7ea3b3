// Java Paimon (the reference implementation) reads a table: every row of its latest snapshot (or of the
// snapshot or tag given), one JSON object per line on stdout. Args: warehouse database.table [snapshot-id | tag:name |
// incremental:<start>,<end>,<scan mode>[;key=value...] | count]; an incremental read (Paimon's incremental-between),
// with any extra dynamic options, adds each row's kind as "_row_kind" ("+I", "-U", "+U", "-D"); count reads the
// latest snapshot's rows (every field) without printing them: {"rows": n, "read_ms": ms from catalog to last row,
// "plan_ms": ms from catalog to the reader created, "cpu_ms": the JVM's CPU time over the same span as read_ms}.
// Java also writes beside us: "write:<commit user>:<commit identifier>" then one arg per row, "<row kind>,<value>,..."
// ("\N": null), committed with that user and identifier (a dynamic-bucket table's buckets from Paimon's
// HashBucketAssigner, as Flink's assigner gives them; a cross-partition table needs Flink's global index: refused);
// "compact": a full compaction of every bucket (BatchTableWrite.compact(partition, bucket, true)). Both print
// {"snapshot": the latest snapshot id}.
// Arg --serve: many reads in this JVM, one per line of stdin (the args above, tab-separated), each answer's lines
// on stdout followed by "#ok", or by "#error" after its stack trace on stderr (logs go to stderr too).
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.InnerTableRead;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.InnerTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.RowKind;

public class PaimonRead {
    private static PrintStream out = System.out;

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--serve")) {
            serve();
            return;
        }
        long started = System.nanoTime(), startedCpu = processCpuMs();
        // "count": read every field of every row, print only timings; "count:N": N such reads in this JVM, the
        // first warming it up (classes, JIT), then the best of the others as a long-lived reader sees it
        boolean count = args.length > 2 && args[2].startsWith("count");
        if (count && args[2].startsWith("count:")) {
            int reads = Integer.parseInt(args[2].substring("count:".length()));
            String[] table = {args[0], args[1], "count"};
            long best = Long.MAX_VALUE, bestCpu = Long.MAX_VALUE;
            for (int i = 0; i < reads; i++) {
                long readStarted = System.nanoTime(), readCpu = processCpuMs();
                main(table);
                if (i > 0) {
                    best = Math.min(best, (System.nanoTime() - readStarted) / 1_000_000);
                    bestCpu = Math.min(bestCpu, processCpuMs() - readCpu);
                }
            }
            out.println("{\"warm_read_ms\": " + best + ", \"warm_cpu_ms\": " + bestCpu + ", \"reads\": " + reads + "}");
            return;
        }
        if (count) args = new String[] {args[0], args[1]};
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        Table table = catalog.getTable(Identifier.fromString(args[1]));
        if (args.length > 2 && (args[2].startsWith("write:") || args[2].equals("compact"))) {
            FileStoreTable store = (FileStoreTable) table;
            if (args[2].equals("compact")) compact(store);
            else write(store, args);
            out.println("{\"snapshot\": " + store.snapshotManager().latestSnapshotId() + "}");
            return;
        }
        boolean incremental = args.length > 2 && args[2].startsWith("incremental:");
        if (args.length > 2) {
            Map<String, String> dynamic = new HashMap<>();
            if (args[2].startsWith("tag:")) dynamic.put("scan.tag-name", args[2].substring(4));
            else if (incremental) {
                String[] parts = args[2].substring("incremental:".length()).split(";");
                for (int i = 1; i < parts.length; i++) {
                    String[] kv = parts[i].split("=", 2);
                    dynamic.put(kv[0], kv[1]);
                }
                String[] range = parts[0].split(",");
                dynamic.put("incremental-between", range[0] + "," + range[1]);
                dynamic.put("incremental-between-scan-mode", range[2]);
            } else dynamic.put("scan.snapshot-id", args[2]);
            table = table.copy(dynamic);
        }
        List<DataField> fields = table.rowType().getFields();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < fields.size(); i++) {
            getters.add(InternalRow.createFieldGetter(fields.get(i).type(), i));
        }
        ReadBuilder builder = table.newReadBuilder();
        TableRead read = builder.newRead();
        if (incremental) read = ((InnerTableRead) read).forceKeepDelete();  // a batch read drops -D rows otherwise
        TableScan scan = builder.newScan();
        // 1.0's batch scan of a deletion-vector or first-row table skips level 0, where an incremental read's delta
        // and changelog files always are: every level is read there, as later Paimon does
        if (incremental) ((InnerTableScan) scan).withLevelFilter(level -> true);
        RecordReader<InternalRow> reader = read.createReader(scan.plan());
        long planned = System.nanoTime();
        if (count) {
            long[] rows = {0};
            reader.forEachRemaining(row -> {
                for (InternalRow.FieldGetter getter : getters) getter.getFieldOrNull(row);
                rows[0]++;
            });
            reader.close();
            long ended = System.nanoTime();
            out.println("{\"rows\": " + rows[0] + ", \"read_ms\": " + (ended - started) / 1_000_000
                    + ", \"plan_ms\": " + (planned - started) / 1_000_000 + ", \"cpu_ms\": " + (processCpuMs() - startedCpu) + "}");
            return;
        }
        StringBuilder line = new StringBuilder();
        reader.forEachRemaining(row -> {
            line.setLength(0);
            line.append('{');
            for (int i = 0; i < fields.size(); i++) {
                if (i > 0) line.append(", ");
                line.append(quote(fields.get(i).name())).append(": ").append(json(getters.get(i).getFieldOrNull(row)));
            }
            if (incremental) line.append(", \"_row_kind\": ").append(quote(row.getRowKind().shortString()));
            out.println(line.append('}'));
        });
        reader.close();
    }

    private static void write(FileStoreTable table, String[] args) throws Exception {
        String[] spec = args[2].split(":");
        String user = spec[1];
        long identifier = Long.parseLong(spec[2]);
        if (table.bucketMode() == BucketMode.CROSS_PARTITION) {
            throw new UnsupportedOperationException("a cross-partition table is written through Flink's global index");
        }
        HashBucketAssigner assigner = table.bucketMode() != BucketMode.HASH_DYNAMIC ? null
                : new HashBucketAssigner(table.snapshotManager(), user, table.store().newIndexFileHandler(), 1, 1, 0,
                                         table.coreOptions().dynamicBucketTargetRowNum());
        RowPartitionKeyExtractor keys = new RowPartitionKeyExtractor(table.schema());
        List<DataField> fields = table.rowType().getFields();
        StreamWriteBuilder builder = table.newStreamWriteBuilder().withCommitUser(user);
        try (StreamTableWrite write = builder.newWrite(); StreamTableCommit commit = builder.newCommit()) {
            write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));  // lookup spills here
            for (int r = 3; r < args.length; r++) {
                String[] values = args[r].split(",", -1);
                GenericRow row = new GenericRow(RowKind.fromShortString(values[0]), fields.size());
                for (int i = 0; i < fields.size(); i++) row.setField(i, parse(fields.get(i).type(), values[i + 1]));
                if (assigner == null) write.write(row);
                else write.write(row, assigner.assign(keys.partition(row), keys.trimmedPrimaryKey(row).hashCode()));
            }
            commit.commit(identifier, write.prepareCommit(true, identifier));
        }
    }

    private static Object parse(DataType type, String value) {
        if (value.equals("\\N")) return null;
        switch (type.getTypeRoot()) {
            case BIGINT: return Long.parseLong(value);
            case INTEGER: return Integer.parseInt(value);
            case DOUBLE: return Double.parseDouble(value);
            case CHAR: case VARCHAR: return BinaryString.fromString(value);
            default: throw new IllegalArgumentException("no parser for " + type);
        }
    }

    private static void compact(FileStoreTable table) throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        Set<List<Object>> buckets = new HashSet<>();
        try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
            write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
            for (Split split : table.newSnapshotReader().read().splits()) {  // every level, level 0 included
                DataSplit data = (DataSplit) split;
                if (buckets.add(Arrays.asList(data.partition(), data.bucket()))) {
                    write.compact(data.partition(), data.bucket(), true);
                }
            }
            commit.commit(write.prepareCommit());
        }
    }

    private static void serve() throws Exception {
        out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)), false, "UTF-8");
        System.setOut(System.err);  // a library's print must not land inside an answer
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        for (String line; (line = requests.readLine()) != null; ) {
            try {
                main(line.split("\t"));
                out.println("#ok");
            } catch (Throwable e) {
                e.printStackTrace();
                System.err.flush();
                out.println("#error");
            }
            out.flush();
        }
    }

    // CPU time of the whole JVM (JIT and GC threads included): steadier than wall time on a busy machine
    private static long processCpuMs() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1_000_000 : -1;
    }

    private static String json(Object v) {
        if (v == null) return "null";
        if (v instanceof BinaryString) return quote(v.toString());
        if (v instanceof Decimal) return quote(((Decimal) v).toBigDecimal().toPlainString());
        if (v instanceof BigDecimal) return quote(((BigDecimal) v).toPlainString());
        if (v instanceof Timestamp) return Long.toString(((Timestamp) v).toMicros());  // epoch microseconds
        if (v instanceof Double && (((Double) v).isNaN() || ((Double) v).isInfinite())) return quote(v.toString());
        if (v instanceof Number || v instanceof Boolean) return v.toString();
        return quote(v.toString());
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
