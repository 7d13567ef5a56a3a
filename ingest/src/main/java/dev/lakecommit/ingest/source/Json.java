package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON values as plain Java objects, parsed with Jackson's streaming parser: objects are {@code Map<String,
 * Object>} (in order), arrays {@code List<Object>}, integers {@code Long} or {@code BigInteger}, other numbers
 * {@code BigDecimal} (exact), and strings, booleans and null as themselves. Duplicate keys and trailing content are
 * errors.
 */
final class Json {
  /**
   * Without Jackson's duplicate detection, which keeps a set of names per object: {@link #value} finds a duplicate key
   * in the map it fills anyway, for the same error. Without its charset detection either: bytes are given to parsers
   * only as ASCII lines, which are UTF-8, so a line is never taken for UTF-16 or UTF-32 because of zero bytes at its
   * start (detection read {@code 00 7B 00 22 ...} as the UTF-16 text {@code {"...} and accepted the line).
   */
  static final JsonFactory FACTORY = JsonFactory.builder().disable(JsonFactory.Feature.CHARSET_DETECTION).build();

  private Json() {}

  /** Thrown for text that is not one JSON value; the message says what and where (column). */
  static final class SyntaxException extends Exception {
    private static final long serialVersionUID = 1L;

    SyntaxException(String message) {
      super(message);
    }
  }

  /** Parses exactly one JSON value. */
  static Object parse(String text) throws SyntaxException {
    return parse(() -> FACTORY.createParser(text));
  }

  /**
   * Parses exactly one JSON value from UTF-8 bytes without decoding them to a string first. Columns in messages
   * count bytes: give ASCII text, or use {@link #parse(String)} where columns must count characters.
   */
  static Object parse(byte[] utf8, int length) throws SyntaxException {
    return parse(() -> FACTORY.createParser(utf8, 0, length));
  }

  /** Opens a parser over one input. */
  private interface ParserSource {
    JsonParser open() throws IOException;
  }

  private static Object parse(ParserSource source) throws SyntaxException {
    try (JsonParser parser = source.open()) {
      JsonToken token = parser.nextToken();
      if (token == null) {
        throw new SyntaxException("empty JSON");
      }
      Object value = value(parser, token);
      JsonToken trailing = parser.nextToken();
      if (trailing != null) {
        throw new SyntaxException("unexpected " + describe(trailing) + " after the JSON value at column "
            + parser.currentTokenLocation().getColumnNr());
      }
      return value;
    } catch (JsonParseException e) {
      String message = e.getOriginalMessage();
      int newline = message.indexOf('\n');
      if (newline > 0) {
        message = message.substring(0, newline);
      }
      throw new SyntaxException("malformed JSON at column " + e.getLocation().getColumnNr() + ": " + message);
    } catch (JsonProcessingException e) {
      throw new SyntaxException("malformed JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Object value(JsonParser parser, JsonToken token) throws IOException {
    switch (token) {
      case START_OBJECT: {
        Map<String, Object> object = new LinkedHashMap<>();
        for (JsonToken next = parser.nextToken(); next != JsonToken.END_OBJECT; next = parser.nextToken()) {
          String name = parser.currentName();
          if (object.containsKey(name)) {
            throw new JsonParseException(parser, "Duplicate field '" + name + "'");
          }
          object.put(name, value(parser, parser.nextToken()));
        }
        return object;
      }
      case START_ARRAY: {
        List<Object> array = new ArrayList<>();
        for (JsonToken next = parser.nextToken(); next != JsonToken.END_ARRAY; next = parser.nextToken()) {
          array.add(value(parser, next));
        }
        return array;
      }
      case VALUE_STRING:
        return parser.getText();
      case VALUE_NUMBER_INT:
        return parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER
            ? parser.getBigIntegerValue() : (Object) parser.getLongValue();
      case VALUE_NUMBER_FLOAT:
        return parser.getDecimalValue();
      case VALUE_TRUE:
        return Boolean.TRUE;
      case VALUE_FALSE:
        return Boolean.FALSE;
      case VALUE_NULL:
        return null;
      default:
        throw new JsonParseException(parser, "unexpected " + describe(token));
    }
  }

  /** "an object", "an array", "a string", "a number", "a boolean", "null". */
  static String kind(Object value) {
    if (value == null) {
      return "null";
    } else if (value instanceof Map) {
      return "an object";
    } else if (value instanceof List) {
      return "an array";
    } else if (value instanceof String) {
      return "a string";
    } else if (value instanceof Boolean) {
      return "a boolean";
    } else {
      return "a number";
    }
  }

  private static String describe(JsonToken token) {
    return token.isScalarValue() ? "value" : token == JsonToken.START_OBJECT ? "object" : token.asString();
  }

  /** The value written back as JSON text. */
  static String write(Object value) {
    StringWriter text = new StringWriter();
    try (JsonGenerator out = FACTORY.createGenerator(text)) {
      write(out, value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return text.toString();
  }

  @SuppressWarnings("unchecked")
  private static void write(JsonGenerator out, Object value) throws IOException {
    if (value == null) {
      out.writeNull();
    } else if (value instanceof Map) {
      out.writeStartObject();
      for (Map.Entry<String, Object> entry : ((Map<String, Object>) value).entrySet()) {
        out.writeFieldName(entry.getKey());
        write(out, entry.getValue());
      }
      out.writeEndObject();
    } else if (value instanceof List) {
      out.writeStartArray();
      for (Object element : (List<Object>) value) {
        write(out, element);
      }
      out.writeEndArray();
    } else if (value instanceof String) {
      out.writeString((String) value);
    } else if (value instanceof Boolean) {
      out.writeBoolean((Boolean) value);
    } else if (value instanceof BigDecimal) {
      out.writeNumber((BigDecimal) value);
    } else if (value instanceof BigInteger) {
      out.writeNumber((BigInteger) value);
    } else {
      out.writeNumber(((Number) value).longValue());
    }
  }
}
