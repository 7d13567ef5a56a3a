package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import java.io.Closeable;
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

  /**
   * Parses the ASCII lines of one input with one of Jackson's non-blocking parsers, fed a line at a time: making a
   * parser per line (its buffers, symbol table and context) cost about as much as parsing the line. The parser is
   * kept while every line is exactly one object followed by nothing but whitespace; on any other line it is dropped,
   * the line is parsed alone as before (for the same value or the same error) and the next line gets a new parser.
   */
  static final class Lines implements Closeable {
    private JsonParser parser;
    private ByteArrayFeeder feeder;
    private byte[] line;
    private int length;
    /** The parser's byte offset where the current line starts: everything fed before it. */
    private long base;
    private int parsers;

    /** The parser, fed {@code length} bytes of {@code utf8} (ASCII), before the line's first token. */
    JsonParser feed(byte[] utf8, int length) throws IOException {
      if (parser == null) {
        parser = FACTORY.createNonBlockingByteArrayParser();
        feeder = (ByteArrayFeeder) parser.getNonBlockingInputFeeder();
        parsers++;
      }
      base = parser.currentLocation().getByteOffset();
      feeder.feedInput(utf8, 0, length);
      this.line = utf8;
      this.length = length;
      return parser;
    }

    /**
     * Whether the parser has just read the end of the line's object and only whitespace follows it on the line;
     * then the parser takes the next line. Otherwise (another value after the object, or not at its end) the parser
     * is dropped.
     */
    boolean endsLine() throws IOException {
      if (parser.currentToken() == JsonToken.END_OBJECT && parser.getParsingContext().inRoot()) {
        for (int i = (int) (parser.currentLocation().getByteOffset() - base); i < length; i++) {
          if (!whitespace(line[i])) {
            drop();
            return false;
          }
        }
        if (parser.nextToken() == JsonToken.NOT_AVAILABLE) {
          return true;
        }
      }
      drop();
      return false;
    }

    /** Forgets the parser: the next line gets a new one. */
    void drop() {
      if (parser != null) {
        try {
          parser.close();
        } catch (IOException e) {
          // a byte-array parser holds no resource
        }
        parser = null;
      }
    }

    /** {@link Json#parse(byte[], int)} of one ASCII line: the same value, or the same error. */
    Object parse(byte[] utf8, int length) throws SyntaxException {
      try {
        JsonParser p = feed(utf8, length);
        JsonToken token = p.nextToken();
        if (token == JsonToken.START_OBJECT) {
          Object value = value(p, token);
          if (endsLine()) {
            return value;
          }
        } else {
          drop();
        }
      } catch (IOException | RuntimeException e) {
        drop();
      }
      return Json.parse(utf8, length);
    }

    /** How many parsers these lines have made: one, and one more after each line that dropped one. */
    int parsers() {
      return parsers;
    }

    @Override
    public void close() {
      drop();
    }
  }

  /** JSON's whitespace between tokens: space, tab, carriage return, line feed. */
  static boolean whitespace(byte b) {
    return b == ' ' || b == '\t' || b == '\r' || b == '\n';
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
