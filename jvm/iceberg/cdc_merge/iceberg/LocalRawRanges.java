package cdc_merge.iceberg;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JsonObjectKeys;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.StringType$;
import org.apache.spark.unsafe.types.UTF8String;

import scala.collection.JavaConverters;

/**
 * What the mirrors of a raw range kept in the driver (raw_ranges.py) need of it, computed there from
 * its rows: each source table's plan (range_plan.py's range_plan_frame) and the newest event of each
 * table and key (raw_ranges.newest_events), with the same results as Spark's own aggregate and
 * window over those rows, which are a Spark job each (together about 0.5 s a cycle of 15,000
 * events on two cores), its TOAST placeholders filled from the key's older events (PlaceholderFold).
 * A range whose plan Spark must compute (a truncate's source time is text in the session's time
 * zone) is left to it.
 */
public final class LocalRawRanges {
    private static final Set<String> TABLE_ACTIONS = new HashSet<>(Arrays.asList("truncate", "schema", "range"));
    private static final Set<String> IMAGE_ACTIONS = new HashSet<>(Arrays.asList("insert", "update", "read"));
    private static final String EXISTING_ROWS_MEMBER = "\"existing_rows\":";
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private LocalRawRanges() {
    }

    /** The raw table's columns these read, by position in relation's output; null when one is missing. */
    private static final class Columns {
        int table = -1;
        int key = -1;
        int action = -1;
        int rawData = -1;
        int seq = -1;
        int landedFile = -1;
        int landedLine = -1;
        int changeType = -1;

        static Columns of(LocalRelation relation) {
            Columns columns = new Columns();
            List<Attribute> output = JavaConverters.seqAsJavaList(relation.output());
            for (int i = 0; i < output.size(); i++) {
                switch (output.get(i).name()) {
                    case "table_name": columns.table = i; break;
                    case "key": columns.key = i; break;
                    case "action": columns.action = i; break;
                    case "raw_data": columns.rawData = i; break;
                    case "seq": columns.seq = i; break;
                    case "landed_file": columns.landedFile = i; break;
                    case "landed_line": columns.landedLine = i; break;
                    case "_change_type": columns.changeType = i; break;
                    default: break;
                }
            }
            boolean complete = columns.table >= 0 && columns.key >= 0 && columns.action >= 0 && columns.rawData >= 0
                && columns.seq >= 0 && columns.landedFile >= 0 && columns.landedLine >= 0 && columns.changeType >= 0;
            return complete ? columns : null;
        }

        boolean inserted(InternalRow row) {
            return !row.isNullAt(changeType) && "INSERT".equals(row.getUTF8String(changeType).toString());
        }

        String text(InternalRow row, int column) {
            return row.isNullAt(column) ? null : row.getUTF8String(column).toString();
        }
    }

    /** One source table's plan, as range_plan.py's PLAN_COLUMNS. */
    private static final class Plan {
        long events;
        UTF8String minKey;
        UTF8String maxKey;
        long placeholderEvents;
        final List<List<String>> columnDefaults = new ArrayList<>();
        final List<List<String>> snapshotRanges = new ArrayList<>();
        final Set<String> fields = new TreeSet<>();
        String oldestSeq;

        Map<String, Object> values() {
            Map<String, Object> values = new LinkedHashMap<>();
            values.put("events", events);
            values.put("min_key_hex", hex(minKey));
            values.put("max_key_hex", hex(maxKey));
            values.put("placeholder_events", placeholderEvents);
            values.put("truncate_seq", "");
            values.put("truncate_source_ts", "");
            values.put("column_defaults", columnDefaults);
            values.put("snapshot_ranges", snapshotRanges);
            values.put("fields", new ArrayList<>(fields));
            values.put("oldest_seq", oldestSeq == null ? "" : oldestSeq);
            return values;
        }
    }

    /**
     * Each source table's plan of a raw range's rows, as JSON from table name to its PLAN_COLUMNS;
     * null when the rows lack a raw table's column or hold a truncate.
     */
    public static String plansJson(LocalRelation relation) throws JsonProcessingException {
        Columns columns = Columns.of(relation);
        if (columns == null) {
            return null;
        }
        JsonObjectKeys objectKeys = new JsonObjectKeys(new BoundReference(columns.rawData, StringType$.MODULE$, true));
        Map<String, Plan> plans = new LinkedHashMap<>();
        for (InternalRow row : JavaConverters.seqAsJavaList(relation.data())) {
            String table = columns.text(row, columns.table);
            if (!columns.inserted(row) || table == null) {  // no mirror reads a table without a name
                continue;
            }
            String action = columns.text(row, columns.action);
            if ("truncate".equals(action)) {
                return null;
            }
            Plan plan = plans.computeIfAbsent(table, name -> new Plan());
            String rawData = columns.text(row, columns.rawData);
            String seq = columns.text(row, columns.seq);
            if (seq != null && (plan.oldestSeq == null || seq.compareTo(plan.oldestSeq) < 0)) {
                plan.oldestSeq = seq;
            }
            if (action != null && !TABLE_ACTIONS.contains(action)) {
                plan.events++;
                if (!row.isNullAt(columns.key)) {
                    UTF8String key = row.getUTF8String(columns.key);
                    if (plan.minKey == null || key.compareTo(plan.minKey) < 0) {
                        plan.minKey = key.clone();
                    }
                    if (plan.maxKey == null || key.compareTo(plan.maxKey) > 0) {
                        plan.maxKey = key.clone();
                    }
                }
                if (rawData != null && rawData.contains(PlaceholderFold.MARKER)) {
                    plan.placeholderEvents++;
                }
            }
            if ("schema".equals(action) && rawData != null && rawData.contains(EXISTING_ROWS_MEMBER)) {
                plan.columnDefaults.add(Arrays.asList(columns.text(row, columns.seq), rawData));
            }
            if ("range".equals(action)) {
                plan.snapshotRanges.add(Arrays.asList(columns.text(row, columns.seq), rawData));
            }
            if (action != null && IMAGE_ACTIONS.contains(action) && rawData != null) {
                // Spark's own json_object_keys: null for text that is not a JSON object.
                ArrayData keys = (ArrayData) objectKeys.eval(row);
                for (int i = 0; keys != null && i < keys.numElements(); i++) {
                    plan.fields.add(keys.getUTF8String(i).toString());
                }
            }
        }
        Map<String, Object> byTable = new LinkedHashMap<>();
        for (Map.Entry<String, Plan> entry : plans.entrySet()) {
            byTable.put(entry.getKey(), entry.getValue().values());
        }
        return new ObjectMapper().writeValueAsString(byTable);
    }

    /**
     * The newest of each table's key events (not its truncate, schema or range events) per key, as a
     * local relation of relation's columns: by seq, then landed_file, then landed_line, each
     * descending with nulls last, its TOAST placeholders filled (foldPlaceholders); null when the rows
     * lack a raw table's column.
     */
    public static LocalRelation newest(LocalRelation relation) {
        Columns columns = Columns.of(relation);
        if (columns == null) {
            return null;
        }
        Map<List<UTF8String>, InternalRow> newest = new LinkedHashMap<>();
        for (InternalRow row : JavaConverters.seqAsJavaList(relation.data())) {
            String action = columns.text(row, columns.action);
            if (!columns.inserted(row) || action == null || TABLE_ACTIONS.contains(action)) {
                continue;
            }
            // A null table or key is a key of its own, as in Spark's window partitions.
            List<UTF8String> tableKey = Arrays.asList(
                row.isNullAt(columns.table) ? null : row.getUTF8String(columns.table).clone(),
                row.isNullAt(columns.key) ? null : row.getUTF8String(columns.key).clone());
            InternalRow kept = newest.get(tableKey);
            if (kept == null || newer(row, kept, columns)) {
                newest.put(tableKey, row);
            }
        }
        foldPlaceholders(relation, columns, newest);
        List<InternalRow> rows = new ArrayList<>(newest.values());
        return new LocalRelation(relation.output(), JavaConverters.asScalaBuffer(rows).toIndexedSeq(), false);
    }

    /**
     * Each kept row whose image holds a TOAST placeholder replaced by one holding the values the
     * key's older events of the range sent (PlaceholderFold), so that the newest event alone gives
     * the row its events give applied in order.
     */
    private static void foldPlaceholders(LocalRelation relation, Columns columns, Map<List<UTF8String>, InternalRow> newest) {
        Map<List<UTF8String>, List<InternalRow>> older = new HashMap<>();
        for (Map.Entry<List<UTF8String>, InternalRow> entry : newest.entrySet()) {
            String rawData = columns.text(entry.getValue(), columns.rawData);
            if (rawData != null && rawData.contains(PlaceholderFold.MARKER)) {
                older.put(entry.getKey(), new ArrayList<>());
            }
        }
        if (older.isEmpty()) {
            return;
        }
        for (InternalRow row : JavaConverters.seqAsJavaList(relation.data())) {
            String action = columns.text(row, columns.action);
            if (!columns.inserted(row) || action == null || TABLE_ACTIONS.contains(action)) {
                continue;
            }
            List<UTF8String> tableKey = Arrays.asList(
                row.isNullAt(columns.table) ? null : row.getUTF8String(columns.table),
                row.isNullAt(columns.key) ? null : row.getUTF8String(columns.key));
            List<InternalRow> events = older.get(tableKey);
            if (events != null && row != newest.get(tableKey)) {
                events.add(row);
            }
        }
        List<Attribute> output = JavaConverters.seqAsJavaList(relation.output());
        for (Map.Entry<List<UTF8String>, List<InternalRow>> entry : older.entrySet()) {
            List<InternalRow> events = entry.getValue();
            events.sort((a, b) -> newer(a, b, columns) ? -1 : (newer(b, a, columns) ? 1 : 0));
            List<String[]> sent = new ArrayList<>(events.size());
            for (InternalRow event : events) {
                sent.add(new String[] {columns.text(event, columns.action), columns.text(event, columns.rawData)});
            }
            InternalRow row = newest.get(entry.getKey());
            String rawData = columns.text(row, columns.rawData);
            String folded = PlaceholderFold.folded(rawData, sent);
            if (!folded.equals(rawData)) {
                newest.put(entry.getKey(), withText(row, output, columns.rawData, folded));
            }
        }
    }

    /** row with text in column. */
    private static InternalRow withText(InternalRow row, List<Attribute> output, int column, String text) {
        Object[] values = new Object[output.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = i == column ? UTF8String.fromString(text) : (row.isNullAt(i) ? null : row.get(i, output.get(i).dataType()));
        }
        return new GenericInternalRow(values);
    }

    /** Whether row comes before kept in the order seq, landed_file, landed_line, descending, nulls last. */
    private static boolean newer(InternalRow row, InternalRow kept, Columns columns) {
        int[] texts = {columns.seq, columns.landedFile};
        for (int column : texts) {
            int order = descendingNullsLast(row.isNullAt(column) ? null : row.getUTF8String(column),
                kept.isNullAt(column) ? null : kept.getUTF8String(column));
            if (order != 0) {
                return order < 0;
            }
        }
        Integer line = row.isNullAt(columns.landedLine) ? null : row.getInt(columns.landedLine);
        Integer keptLine = kept.isNullAt(columns.landedLine) ? null : kept.getInt(columns.landedLine);
        return descendingNullsLast(line, keptLine) < 0;
    }

    /** Negative when a comes first in a descending order with nulls last. */
    private static <T extends Comparable<T>> int descendingNullsLast(T a, T b) {
        if (a == null || b == null) {
            return a == null ? (b == null ? 0 : 1) : -1;
        }
        return b.compareTo(a);
    }

    /** Spark's hex() of a string: its UTF-8 bytes, upper case; "" for none. */
    private static String hex(UTF8String text) {
        if (text == null) {
            return "";
        }
        byte[] bytes = text.getBytes();
        StringBuilder hex = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            hex.append(HEX[(b >> 4) & 0xF]).append(HEX[b & 0xF]);
        }
        return hex.toString();
    }
}
