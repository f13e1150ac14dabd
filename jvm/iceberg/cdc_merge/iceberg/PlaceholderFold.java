package cdc_merge.iceberg;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * A key's newest row image with its TOAST placeholders filled from the key's older events of the
 * same batch. Debezium writes '__debezium_unavailable_value' for a PostgreSQL TOAST column an
 * update left unchanged; the row then holds the value the key's newest older event sent. Applying
 * a key's events one round each, oldest first (dedup.sql), reaches the same row at the cost of a
 * commit or MERGE per round; folded here, the newest event alone is applied. A field no older
 * event of the batch sent stays a placeholder, and the write keeps the mirror's stored value
 * (write.sql). A delete ends the search: the row it removed holds nothing, so such a field is null,
 * as the rounds leave it. Values are spliced in as their JSON text: numbers keep their digits.
 */
final class PlaceholderFold {
    static final String MARKER = "__debezium_unavailable_value";
    private static final JsonFactory JSON = new JsonFactory();

    private PlaceholderFold() {
    }

    /** One top-level member of a JSON object: its name, where its value's text starts and ends. */
    private static final class Member {
        final String name;
        final int start;
        final int end;
        final boolean placeholder;

        Member(String name, int start, int end, boolean placeholder) {
            this.name = name;
            this.start = start;
            this.end = end;
            this.placeholder = placeholder;
        }
    }

    /** The members of a JSON object's text, in order; null when text is not one JSON object. */
    static List<Member> members(String text) {
        try (JsonParser parser = JSON.createParser(text)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            List<Member> members = new ArrayList<>();
            JsonToken token;
            while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
                String name = parser.getCurrentName();
                JsonToken value = parser.nextToken();
                int start = (int) parser.getTokenLocation().getCharOffset();
                boolean placeholder = false;
                if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
                    parser.skipChildren();
                } else if (value == JsonToken.VALUE_STRING) {
                    // Reading the text finishes the token, so the location is after its closing quote.
                    placeholder = MARKER.equals(parser.getText());
                }
                members.add(new Member(name, start, (int) parser.getCurrentLocation().getCharOffset(), placeholder));
            }
            return token == JsonToken.END_OBJECT && parser.nextToken() == null ? members : null;
        } catch (IOException notJson) {
            return null;
        }
    }

    /**
     * newest with each placeholder member's value taken from older, the key's earlier events newest
     * first ({action, raw_data} each): from the first that sends the member, or null past a delete.
     * newest itself when nothing changes (not an object, no placeholder, none filled).
     */
    static String folded(String newest, List<String[]> older) {
        List<Member> members = newest == null ? null : members(newest);
        if (members == null) {
            return newest;
        }
        Set<String> pending = new LinkedHashSet<>();
        for (Member member : members) {
            if (member.placeholder) {
                pending.add(member.name);
            }
        }
        Map<String, String> values = new HashMap<>();
        for (String[] event : older) {
            if (pending.isEmpty()) {
                break;
            }
            if ("delete".equals(event[0])) {
                for (String name : pending) {
                    values.put(name, "null");
                }
                break;
            }
            List<Member> sent = event[1] == null ? null : members(event[1]);
            for (int i = 0; sent != null && i < sent.size(); i++) {
                Member member = sent.get(i);
                if (!member.placeholder && pending.remove(member.name)) {
                    values.put(member.name, event[1].substring(member.start, member.end));
                }
            }
        }
        if (values.isEmpty()) {
            return newest;
        }
        StringBuilder text = new StringBuilder(newest.length());
        int copied = 0;
        for (Member member : members) {
            String value = member.placeholder ? values.get(member.name) : null;
            if (value != null) {
                text.append(newest, copied, member.start).append(value);
                copied = member.end;
            }
        }
        return text.append(newest, copied, newest.length()).toString();
    }
}
