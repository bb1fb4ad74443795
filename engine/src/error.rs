//! Errors as S3 Select reports them: an AWS error code, an HTTP status and a message.
//!
//! Every failure the engine can meet — a bad request, malformed SQL, a value that will not
//! cast, a corrupt GZIP member, an over-long record — becomes one [`SelectError`]. The
//! gateway turns it into an S3 XML error (before the event stream has begun) or an error
//! event (after); the CLI prints `code: message`. The codes are AWS's, so that clients which
//! branch on them (the AWS SDKs, Trino, Presto) behave as they do against AWS.

use std::fmt;

/// The AWS error codes that SelectObjectContent can answer with.
///
/// Names and HTTP statuses follow AWS's "List of SELECT Object Content Error Codes".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    // --- request shape -------------------------------------------------------------------
    EmptyRequestBody,
    ExpressionTooLong,
    InvalidCompressionFormat,
    InvalidDataSource,
    InvalidExpressionType,
    InvalidFileHeaderInfo,
    InvalidQuoteFields,
    InvalidRequestParameter,
    InvalidScanRange,
    InvalidTextEncoding,
    MissingRequiredParameter,
    ObjectSerializationConflict,
    UnsupportedScanRangeInput,
    // --- SQL parsing ---------------------------------------------------------------------
    ParseAsteriskIsNotAloneInSelectList,
    ParseCastArity,
    ParseEmptySelect,
    ParseExpectedArgumentDelimiter,
    ParseExpectedDatePart,
    ParseExpectedExpression,
    ParseExpectedIdentForAlias,
    ParseExpectedKeyword,
    ParseExpectedLeftParenAfterCast,
    ParseExpectedLeftParenBuiltinFunctionCall,
    ParseExpectedNumber,
    ParseExpectedRightParenBuiltinFunctionCall,
    ParseExpectedTokenType,
    ParseExpectedTypeName,
    ParseExpectedWhenClause,
    ParseInvalidTypeParam,
    ParseNonUnaryAgregateFunctionCall,
    ParseSelectMissingFrom,
    ParseUnexpectedKeyword,
    ParseUnexpectedOperator,
    ParseUnexpectedTerm,
    ParseUnexpectedToken,
    ParseUnknownOperator,
    ParseUnsupportedAlias,
    ParseUnsupportedCallWithStar,
    ParseUnsupportedCase,
    ParseUnsupportedSelect,
    ParseUnsupportedSyntax,
    ParseUnsupportedToken,
    LexerInvalidChar,
    LexerInvalidLiteral,
    // --- binding and evaluation ----------------------------------------------------------
    AmbiguousFieldName,
    CastFailed,
    EvaluatorBindingDoesNotExist,
    EvaluatorInvalidArguments,
    EvaluatorInvalidTimestampFormatPattern,
    EvaluatorInvalidTimestampFormatPatternToken,
    EvaluatorNegativeLimit,
    IllegalSqlFunctionArgument,
    IncorrectSqlFunctionArgumentType,
    IntegerOverflow,
    InvalidCast,
    InvalidColumnIndex,
    InvalidDataType,
    InvalidTableAlias,
    LikeInvalidInputs,
    UnsupportedFunction,
    UnsupportedSqlOperation,
    UnsupportedSqlStructure,
    UnsupportedSyntax,
    ValueParseFailure,
    /// The Ceph dialect's code for a query that fails while it is evaluated (a name that is
    /// neither a column nor an alias, an alias defined through itself). Ceph's s3select
    /// reported it as `ProcessingTimeError`, and ceph/s3-tests looks for that text; RGW 18.2
    /// spells it `s3select-ProcessingTime-Error`. Never used in the AWS dialect.
    ProcessingTimeError,
    // --- input data ----------------------------------------------------------------------
    CSVEscapingRecordDelimiter,
    CSVParsingError,
    CSVUnescapedQuote,
    InvalidJsonType,
    JSONParsingError,
    OverMaxColumn,
    OverMaxParquetBlockSize,
    OverMaxRecordSize,
    ParquetParsingError,
    ParquetUnsupportedCompressionCodec,
    TruncatedInput,
    // --- the engine itself ---------------------------------------------------------------
    InternalError,
}

impl ErrorCode {
    /// The code exactly as AWS spells it on the wire.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            EmptyRequestBody => "EmptyRequestBody",
            ExpressionTooLong => "ExpressionTooLong",
            InvalidCompressionFormat => "InvalidCompressionFormat",
            InvalidDataSource => "InvalidDataSource",
            InvalidExpressionType => "InvalidExpressionType",
            InvalidFileHeaderInfo => "InvalidFileHeaderInfo",
            InvalidQuoteFields => "InvalidQuoteFields",
            InvalidRequestParameter => "InvalidRequestParameter",
            InvalidScanRange => "InvalidScanRange",
            InvalidTextEncoding => "InvalidTextEncoding",
            MissingRequiredParameter => "MissingRequiredParameter",
            ObjectSerializationConflict => "ObjectSerializationConflict",
            UnsupportedScanRangeInput => "UnsupportedScanRangeInput",
            ParseAsteriskIsNotAloneInSelectList => "ParseAsteriskIsNotAloneInSelectList",
            ParseCastArity => "ParseCastArity",
            ParseEmptySelect => "ParseEmptySelect",
            ParseExpectedArgumentDelimiter => "ParseExpectedArgumentDelimiter",
            ParseExpectedDatePart => "ParseExpectedDatePart",
            ParseExpectedExpression => "ParseExpectedExpression",
            ParseExpectedIdentForAlias => "ParseExpectedIdentForAlias",
            ParseExpectedKeyword => "ParseExpectedKeyword",
            ParseExpectedLeftParenAfterCast => "ParseExpectedLeftParenAfterCast",
            ParseExpectedLeftParenBuiltinFunctionCall => {
                "ParseExpectedLeftParenBuiltinFunctionCall"
            }
            ParseExpectedNumber => "ParseExpectedNumber",
            ParseExpectedRightParenBuiltinFunctionCall => {
                "ParseExpectedRightParenBuiltinFunctionCall"
            }
            ParseExpectedTokenType => "ParseExpectedTokenType",
            ParseExpectedTypeName => "ParseExpectedTypeName",
            ParseExpectedWhenClause => "ParseExpectedWhenClause",
            ParseInvalidTypeParam => "ParseInvalidTypeParam",
            ParseNonUnaryAgregateFunctionCall => "ParseNonUnaryAgregateFunctionCall",
            ParseSelectMissingFrom => "ParseSelectMissingFrom",
            ParseUnexpectedKeyword => "ParseUnexpectedKeyword",
            ParseUnexpectedOperator => "ParseUnexpectedOperator",
            ParseUnexpectedTerm => "ParseUnexpectedTerm",
            ParseUnexpectedToken => "ParseUnexpectedToken",
            ParseUnknownOperator => "ParseUnknownOperator",
            ParseUnsupportedAlias => "ParseUnsupportedAlias",
            ParseUnsupportedCallWithStar => "ParseUnsupportedCallWithStar",
            ParseUnsupportedCase => "ParseUnsupportedCase",
            ParseUnsupportedSelect => "ParseUnsupportedSelect",
            ParseUnsupportedSyntax => "ParseUnsupportedSyntax",
            ParseUnsupportedToken => "ParseUnsupportedToken",
            LexerInvalidChar => "LexerInvalidChar",
            LexerInvalidLiteral => "LexerInvalidLiteral",
            AmbiguousFieldName => "AmbiguousFieldName",
            CastFailed => "CastFailed",
            EvaluatorBindingDoesNotExist => "EvaluatorBindingDoesNotExist",
            EvaluatorInvalidArguments => "EvaluatorInvalidArguments",
            EvaluatorInvalidTimestampFormatPattern => "EvaluatorInvalidTimestampFormatPattern",
            EvaluatorInvalidTimestampFormatPatternToken => {
                "EvaluatorInvalidTimestampFormatPatternToken"
            }
            EvaluatorNegativeLimit => "EvaluatorNegativeLimit",
            IllegalSqlFunctionArgument => "IllegalSqlFunctionArgument",
            IncorrectSqlFunctionArgumentType => "IncorrectSqlFunctionArgumentType",
            IntegerOverflow => "IntegerOverflow",
            InvalidCast => "InvalidCast",
            InvalidColumnIndex => "InvalidColumnIndex",
            InvalidDataType => "InvalidDataType",
            InvalidTableAlias => "InvalidTableAlias",
            LikeInvalidInputs => "LikeInvalidInputs",
            UnsupportedFunction => "UnsupportedFunction",
            UnsupportedSqlOperation => "UnsupportedSqlOperation",
            UnsupportedSqlStructure => "UnsupportedSqlStructure",
            UnsupportedSyntax => "UnsupportedSyntax",
            ValueParseFailure => "ValueParseFailure",
            ProcessingTimeError => "ProcessingTimeError",
            CSVEscapingRecordDelimiter => "CSVEscapingRecordDelimiter",
            CSVParsingError => "CSVParsingError",
            CSVUnescapedQuote => "CSVUnescapedQuote",
            InvalidJsonType => "InvalidJsonType",
            JSONParsingError => "JSONParsingError",
            OverMaxColumn => "OverMaxColumn",
            OverMaxParquetBlockSize => "OverMaxParquetBlockSize",
            OverMaxRecordSize => "OverMaxRecordSize",
            ParquetParsingError => "ParquetParsingError",
            ParquetUnsupportedCompressionCodec => "ParquetUnsupportedCompressionCodec",
            TruncatedInput => "TruncatedInput",
            InternalError => "InternalError",
        }
    }

    /// The HTTP status AWS pairs with the code when it is answered before the event stream.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InternalError => 500,
            _ => 400,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed select: what AWS would answer, with a message that names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct SelectError {
    pub code: ErrorCode,
    pub message: String,
}

impl SelectError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SelectError {
            code,
            message: message.into(),
        }
    }

    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }
}

/// Shorthand used across the engine.
pub type Result<T, E = SelectError> = std::result::Result<T, E>;

/// Builds a [`SelectError`] with `format!` syntax: `err!(CastFailed, "cannot cast {v}")`.
#[macro_export]
macro_rules! err {
    ($code:ident, $($arg:tt)*) => {
        $crate::error::SelectError::new($crate::error::ErrorCode::$code, format!($($arg)*))
    };
}
