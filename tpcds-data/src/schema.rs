//! Column names and types of the 24 TPC-DS tables, in the order of the specification's DDL
//! (`tpcds.sql` of the TPC-DS kit), which is the field order of dsdgen's flat files.
//!
//! The data files carry no header, so a field is identified only by its position on the
//! line: the `i`-th `|`-terminated field of a row is `columns[i]` of its table.
//!
//! Types are the DDL's own, not a query engine's: `identifier` columns (the `_sk` surrogate
//! keys) are declared `integer`, so they are [`ColumnType::Integer`] here. Two spellings of
//! the DDL are kept on purpose because they are the real column names: `s_tax_precentage`
//! (sic) in `store`, and `c_last_review_date_sk` in `customer` (an `integer` date key since
//! kit v2.6; older kits had `c_last_review_date char(10)`, but dsdgen writes a date key).

/// A column's SQL type as the TPC-DS DDL declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `integer` (surrogate keys and counts).
    Integer,
    /// `decimal(p, s)`.
    Decimal(u8, i8),
    /// `char(n)`.
    Char(u16),
    /// `varchar(n)`.
    Varchar(u16),
    /// `date`.
    Date,
    /// `time` (only dbgen_version has it; listed for completeness).
    Time,
}

/// One table: its name and `(column, type)` pairs in file order.
pub struct TableSchema {
    pub name: &'static str,
    pub columns: &'static [(&'static str, ColumnType)],
}

use arrow_schema::{DataType, Field, Schema};
use ColumnType::*;

/// The 24 tables in alphabetical order (the order of `crate::data::TABLES`).
pub const SCHEMAS: [TableSchema; 24] = [
    TableSchema {
        name: "call_center",
        columns: &[
            ("cc_call_center_sk", Integer),
            ("cc_call_center_id", Char(16)),
            ("cc_rec_start_date", Date),
            ("cc_rec_end_date", Date),
            ("cc_closed_date_sk", Integer),
            ("cc_open_date_sk", Integer),
            ("cc_name", Varchar(50)),
            ("cc_class", Varchar(50)),
            ("cc_employees", Integer),
            ("cc_sq_ft", Integer),
            ("cc_hours", Char(20)),
            ("cc_manager", Varchar(40)),
            ("cc_mkt_id", Integer),
            ("cc_mkt_class", Char(50)),
            ("cc_mkt_desc", Varchar(100)),
            ("cc_market_manager", Varchar(40)),
            ("cc_division", Integer),
            ("cc_division_name", Varchar(50)),
            ("cc_company", Integer),
            ("cc_company_name", Char(50)),
            ("cc_street_number", Char(10)),
            ("cc_street_name", Varchar(60)),
            ("cc_street_type", Char(15)),
            ("cc_suite_number", Char(10)),
            ("cc_city", Varchar(60)),
            ("cc_county", Varchar(30)),
            ("cc_state", Char(2)),
            ("cc_zip", Char(10)),
            ("cc_country", Varchar(20)),
            ("cc_gmt_offset", Decimal(5, 2)),
            ("cc_tax_percentage", Decimal(5, 2)),
        ],
    },
    TableSchema {
        name: "catalog_page",
        columns: &[
            ("cp_catalog_page_sk", Integer),
            ("cp_catalog_page_id", Char(16)),
            ("cp_start_date_sk", Integer),
            ("cp_end_date_sk", Integer),
            ("cp_department", Varchar(50)),
            ("cp_catalog_number", Integer),
            ("cp_catalog_page_number", Integer),
            ("cp_description", Varchar(100)),
            ("cp_type", Varchar(100)),
        ],
    },
    TableSchema {
        name: "catalog_returns",
        columns: &[
            ("cr_returned_date_sk", Integer),
            ("cr_returned_time_sk", Integer),
            ("cr_item_sk", Integer),
            ("cr_refunded_customer_sk", Integer),
            ("cr_refunded_cdemo_sk", Integer),
            ("cr_refunded_hdemo_sk", Integer),
            ("cr_refunded_addr_sk", Integer),
            ("cr_returning_customer_sk", Integer),
            ("cr_returning_cdemo_sk", Integer),
            ("cr_returning_hdemo_sk", Integer),
            ("cr_returning_addr_sk", Integer),
            ("cr_call_center_sk", Integer),
            ("cr_catalog_page_sk", Integer),
            ("cr_ship_mode_sk", Integer),
            ("cr_warehouse_sk", Integer),
            ("cr_reason_sk", Integer),
            ("cr_order_number", Integer),
            ("cr_return_quantity", Integer),
            ("cr_return_amount", Decimal(7, 2)),
            ("cr_return_tax", Decimal(7, 2)),
            ("cr_return_amt_inc_tax", Decimal(7, 2)),
            ("cr_fee", Decimal(7, 2)),
            ("cr_return_ship_cost", Decimal(7, 2)),
            ("cr_refunded_cash", Decimal(7, 2)),
            ("cr_reversed_charge", Decimal(7, 2)),
            ("cr_store_credit", Decimal(7, 2)),
            ("cr_net_loss", Decimal(7, 2)),
        ],
    },
    TableSchema {
        name: "catalog_sales",
        columns: &[
            ("cs_sold_date_sk", Integer),
            ("cs_sold_time_sk", Integer),
            ("cs_ship_date_sk", Integer),
            ("cs_bill_customer_sk", Integer),
            ("cs_bill_cdemo_sk", Integer),
            ("cs_bill_hdemo_sk", Integer),
            ("cs_bill_addr_sk", Integer),
            ("cs_ship_customer_sk", Integer),
            ("cs_ship_cdemo_sk", Integer),
            ("cs_ship_hdemo_sk", Integer),
            ("cs_ship_addr_sk", Integer),
            ("cs_call_center_sk", Integer),
            ("cs_catalog_page_sk", Integer),
            ("cs_ship_mode_sk", Integer),
            ("cs_warehouse_sk", Integer),
            ("cs_item_sk", Integer),
            ("cs_promo_sk", Integer),
            ("cs_order_number", Integer),
            ("cs_quantity", Integer),
            ("cs_wholesale_cost", Decimal(7, 2)),
            ("cs_list_price", Decimal(7, 2)),
            ("cs_sales_price", Decimal(7, 2)),
            ("cs_ext_discount_amt", Decimal(7, 2)),
            ("cs_ext_sales_price", Decimal(7, 2)),
            ("cs_ext_wholesale_cost", Decimal(7, 2)),
            ("cs_ext_list_price", Decimal(7, 2)),
            ("cs_ext_tax", Decimal(7, 2)),
            ("cs_coupon_amt", Decimal(7, 2)),
            ("cs_ext_ship_cost", Decimal(7, 2)),
            ("cs_net_paid", Decimal(7, 2)),
            ("cs_net_paid_inc_tax", Decimal(7, 2)),
            ("cs_net_paid_inc_ship", Decimal(7, 2)),
            ("cs_net_paid_inc_ship_tax", Decimal(7, 2)),
            ("cs_net_profit", Decimal(7, 2)),
        ],
    },
    TableSchema {
        name: "customer",
        columns: &[
            ("c_customer_sk", Integer),
            ("c_customer_id", Char(16)),
            ("c_current_cdemo_sk", Integer),
            ("c_current_hdemo_sk", Integer),
            ("c_current_addr_sk", Integer),
            ("c_first_shipto_date_sk", Integer),
            ("c_first_sales_date_sk", Integer),
            ("c_salutation", Char(10)),
            ("c_first_name", Char(20)),
            ("c_last_name", Char(30)),
            ("c_preferred_cust_flag", Char(1)),
            ("c_birth_day", Integer),
            ("c_birth_month", Integer),
            ("c_birth_year", Integer),
            ("c_birth_country", Varchar(20)),
            ("c_login", Char(13)),
            ("c_email_address", Char(50)),
            ("c_last_review_date_sk", Integer),
        ],
    },
    TableSchema {
        name: "customer_address",
        columns: &[
            ("ca_address_sk", Integer),
            ("ca_address_id", Char(16)),
            ("ca_street_number", Char(10)),
            ("ca_street_name", Varchar(60)),
            ("ca_street_type", Char(15)),
            ("ca_suite_number", Char(10)),
            ("ca_city", Varchar(60)),
            ("ca_county", Varchar(30)),
            ("ca_state", Char(2)),
            ("ca_zip", Char(10)),
            ("ca_country", Varchar(20)),
            ("ca_gmt_offset", Decimal(5, 2)),
            ("ca_location_type", Char(20)),
        ],
    },
    TableSchema {
        name: "customer_demographics",
        columns: &[
            ("cd_demo_sk", Integer),
            ("cd_gender", Char(1)),
            ("cd_marital_status", Char(1)),
            ("cd_education_status", Char(20)),
            ("cd_purchase_estimate", Integer),
            ("cd_credit_rating", Char(10)),
            ("cd_dep_count", Integer),
            ("cd_dep_employed_count", Integer),
            ("cd_dep_college_count", Integer),
        ],
    },
    TableSchema {
        name: "date_dim",
        columns: &[
            ("d_date_sk", Integer),
            ("d_date_id", Char(16)),
            ("d_date", Date),
            ("d_month_seq", Integer),
            ("d_week_seq", Integer),
            ("d_quarter_seq", Integer),
            ("d_year", Integer),
            ("d_dow", Integer),
            ("d_moy", Integer),
            ("d_dom", Integer),
            ("d_qoy", Integer),
            ("d_fy_year", Integer),
            ("d_fy_quarter_seq", Integer),
            ("d_fy_week_seq", Integer),
            ("d_day_name", Char(9)),
            ("d_quarter_name", Char(6)),
            ("d_holiday", Char(1)),
            ("d_weekend", Char(1)),
            ("d_following_holiday", Char(1)),
            ("d_first_dom", Integer),
            ("d_last_dom", Integer),
            ("d_same_day_ly", Integer),
            ("d_same_day_lq", Integer),
            ("d_current_day", Char(1)),
            ("d_current_week", Char(1)),
            ("d_current_month", Char(1)),
            ("d_current_quarter", Char(1)),
            ("d_current_year", Char(1)),
        ],
    },
    TableSchema {
        name: "household_demographics",
        columns: &[
            ("hd_demo_sk", Integer),
            ("hd_income_band_sk", Integer),
            ("hd_buy_potential", Char(15)),
            ("hd_dep_count", Integer),
            ("hd_vehicle_count", Integer),
        ],
    },
    TableSchema {
        name: "income_band",
        columns: &[
            ("ib_income_band_sk", Integer),
            ("ib_lower_bound", Integer),
            ("ib_upper_bound", Integer),
        ],
    },
    TableSchema {
        name: "inventory",
        columns: &[
            ("inv_date_sk", Integer),
            ("inv_item_sk", Integer),
            ("inv_warehouse_sk", Integer),
            ("inv_quantity_on_hand", Integer),
        ],
    },
    TableSchema {
        name: "item",
        columns: &[
            ("i_item_sk", Integer),
            ("i_item_id", Char(16)),
            ("i_rec_start_date", Date),
            ("i_rec_end_date", Date),
            ("i_item_desc", Varchar(200)),
            ("i_current_price", Decimal(7, 2)),
            ("i_wholesale_cost", Decimal(7, 2)),
            ("i_brand_id", Integer),
            ("i_brand", Char(50)),
            ("i_class_id", Integer),
            ("i_class", Char(50)),
            ("i_category_id", Integer),
            ("i_category", Char(50)),
            ("i_manufact_id", Integer),
            ("i_manufact", Char(50)),
            ("i_size", Char(20)),
            ("i_formulation", Char(20)),
            ("i_color", Char(20)),
            ("i_units", Char(10)),
            ("i_container", Char(10)),
            ("i_manager_id", Integer),
            ("i_product_name", Char(50)),
        ],
    },
    TableSchema {
        name: "promotion",
        columns: &[
            ("p_promo_sk", Integer),
            ("p_promo_id", Char(16)),
            ("p_start_date_sk", Integer),
            ("p_end_date_sk", Integer),
            ("p_item_sk", Integer),
            ("p_cost", Decimal(15, 2)),
            ("p_response_target", Integer),
            ("p_promo_name", Char(50)),
            ("p_channel_dmail", Char(1)),
            ("p_channel_email", Char(1)),
            ("p_channel_catalog", Char(1)),
            ("p_channel_tv", Char(1)),
            ("p_channel_radio", Char(1)),
            ("p_channel_press", Char(1)),
            ("p_channel_event", Char(1)),
            ("p_channel_demo", Char(1)),
            ("p_channel_details", Varchar(100)),
            ("p_purpose", Char(15)),
            ("p_discount_active", Char(1)),
        ],
    },
    TableSchema {
        name: "reason",
        columns: &[
            ("r_reason_sk", Integer),
            ("r_reason_id", Char(16)),
            ("r_reason_desc", Char(100)),
        ],
    },
    TableSchema {
        name: "ship_mode",
        columns: &[
            ("sm_ship_mode_sk", Integer),
            ("sm_ship_mode_id", Char(16)),
            ("sm_type", Char(30)),
            ("sm_code", Char(10)),
            ("sm_carrier", Char(20)),
            ("sm_contract", Char(20)),
        ],
    },
    TableSchema {
        name: "store",
        columns: &[
            ("s_store_sk", Integer),
            ("s_store_id", Char(16)),
            ("s_rec_start_date", Date),
            ("s_rec_end_date", Date),
            ("s_closed_date_sk", Integer),
            ("s_store_name", Varchar(50)),
            ("s_number_employees", Integer),
            ("s_floor_space", Integer),
            ("s_hours", Char(20)),
            ("s_manager", Varchar(40)),
            ("s_market_id", Integer),
            ("s_geography_class", Varchar(100)),
            ("s_market_desc", Varchar(100)),
            ("s_market_manager", Varchar(40)),
            ("s_division_id", Integer),
            ("s_division_name", Varchar(50)),
            ("s_company_id", Integer),
            ("s_company_name", Varchar(50)),
            ("s_street_number", Varchar(10)),
            ("s_street_name", Varchar(60)),
            ("s_street_type", Char(15)),
            ("s_suite_number", Char(10)),
            ("s_city", Varchar(60)),
            ("s_county", Varchar(30)),
            ("s_state", Char(2)),
            ("s_zip", Char(10)),
            ("s_country", Varchar(20)),
            ("s_gmt_offset", Decimal(5, 2)),
            ("s_tax_precentage", Decimal(5, 2)),
        ],
    },
    TableSchema {
        name: "store_returns",
        columns: &[
            ("sr_returned_date_sk", Integer),
            ("sr_return_time_sk", Integer),
            ("sr_item_sk", Integer),
            ("sr_customer_sk", Integer),
            ("sr_cdemo_sk", Integer),
            ("sr_hdemo_sk", Integer),
            ("sr_addr_sk", Integer),
            ("sr_store_sk", Integer),
            ("sr_reason_sk", Integer),
            ("sr_ticket_number", Integer),
            ("sr_return_quantity", Integer),
            ("sr_return_amt", Decimal(7, 2)),
            ("sr_return_tax", Decimal(7, 2)),
            ("sr_return_amt_inc_tax", Decimal(7, 2)),
            ("sr_fee", Decimal(7, 2)),
            ("sr_return_ship_cost", Decimal(7, 2)),
            ("sr_refunded_cash", Decimal(7, 2)),
            ("sr_reversed_charge", Decimal(7, 2)),
            ("sr_store_credit", Decimal(7, 2)),
            ("sr_net_loss", Decimal(7, 2)),
        ],
    },
    TableSchema {
        name: "store_sales",
        columns: &[
            ("ss_sold_date_sk", Integer),
            ("ss_sold_time_sk", Integer),
            ("ss_item_sk", Integer),
            ("ss_customer_sk", Integer),
            ("ss_cdemo_sk", Integer),
            ("ss_hdemo_sk", Integer),
            ("ss_addr_sk", Integer),
            ("ss_store_sk", Integer),
            ("ss_promo_sk", Integer),
            ("ss_ticket_number", Integer),
            ("ss_quantity", Integer),
            ("ss_wholesale_cost", Decimal(7, 2)),
            ("ss_list_price", Decimal(7, 2)),
            ("ss_sales_price", Decimal(7, 2)),
            ("ss_ext_discount_amt", Decimal(7, 2)),
            ("ss_ext_sales_price", Decimal(7, 2)),
            ("ss_ext_wholesale_cost", Decimal(7, 2)),
            ("ss_ext_list_price", Decimal(7, 2)),
            ("ss_ext_tax", Decimal(7, 2)),
            ("ss_coupon_amt", Decimal(7, 2)),
            ("ss_net_paid", Decimal(7, 2)),
            ("ss_net_paid_inc_tax", Decimal(7, 2)),
            ("ss_net_profit", Decimal(7, 2)),
        ],
    },
    TableSchema {
        name: "time_dim",
        columns: &[
            ("t_time_sk", Integer),
            ("t_time_id", Char(16)),
            ("t_time", Integer),
            ("t_hour", Integer),
            ("t_minute", Integer),
            ("t_second", Integer),
            ("t_am_pm", Char(2)),
            ("t_shift", Char(20)),
            ("t_sub_shift", Char(20)),
            ("t_meal_time", Char(20)),
        ],
    },
    TableSchema {
        name: "warehouse",
        columns: &[
            ("w_warehouse_sk", Integer),
            ("w_warehouse_id", Char(16)),
            ("w_warehouse_name", Varchar(20)),
            ("w_warehouse_sq_ft", Integer),
            ("w_street_number", Char(10)),
            ("w_street_name", Varchar(60)),
            ("w_street_type", Char(15)),
            ("w_suite_number", Char(10)),
            ("w_city", Varchar(60)),
            ("w_county", Varchar(30)),
            ("w_state", Char(2)),
            ("w_zip", Char(10)),
            ("w_country", Varchar(20)),
            ("w_gmt_offset", Decimal(5, 2)),
        ],
    },
    TableSchema {
        name: "web_page",
        columns: &[
            ("wp_web_page_sk", Integer),
            ("wp_web_page_id", Char(16)),
            ("wp_rec_start_date", Date),
            ("wp_rec_end_date", Date),
            ("wp_creation_date_sk", Integer),
            ("wp_access_date_sk", Integer),
            ("wp_autogen_flag", Char(1)),
            ("wp_customer_sk", Integer),
            ("wp_url", Varchar(100)),
            ("wp_type", Char(50)),
            ("wp_char_count", Integer),
            ("wp_link_count", Integer),
            ("wp_image_count", Integer),
            ("wp_max_ad_count", Integer),
        ],
    },
    TableSchema {
        name: "web_returns",
        columns: &[
            ("wr_returned_date_sk", Integer),
            ("wr_returned_time_sk", Integer),
            ("wr_item_sk", Integer),
            ("wr_refunded_customer_sk", Integer),
            ("wr_refunded_cdemo_sk", Integer),
            ("wr_refunded_hdemo_sk", Integer),
            ("wr_refunded_addr_sk", Integer),
            ("wr_returning_customer_sk", Integer),
            ("wr_returning_cdemo_sk", Integer),
            ("wr_returning_hdemo_sk", Integer),
            ("wr_returning_addr_sk", Integer),
            ("wr_web_page_sk", Integer),
            ("wr_reason_sk", Integer),
            ("wr_order_number", Integer),
            ("wr_return_quantity", Integer),
            ("wr_return_amt", Decimal(7, 2)),
            ("wr_return_tax", Decimal(7, 2)),
            ("wr_return_amt_inc_tax", Decimal(7, 2)),
            ("wr_fee", Decimal(7, 2)),
            ("wr_return_ship_cost", Decimal(7, 2)),
            ("wr_refunded_cash", Decimal(7, 2)),
            ("wr_reversed_charge", Decimal(7, 2)),
            ("wr_account_credit", Decimal(7, 2)),
            ("wr_net_loss", Decimal(7, 2)),
        ],
    },
    TableSchema {
        name: "web_sales",
        columns: &[
            ("ws_sold_date_sk", Integer),
            ("ws_sold_time_sk", Integer),
            ("ws_ship_date_sk", Integer),
            ("ws_item_sk", Integer),
            ("ws_bill_customer_sk", Integer),
            ("ws_bill_cdemo_sk", Integer),
            ("ws_bill_hdemo_sk", Integer),
            ("ws_bill_addr_sk", Integer),
            ("ws_ship_customer_sk", Integer),
            ("ws_ship_cdemo_sk", Integer),
            ("ws_ship_hdemo_sk", Integer),
            ("ws_ship_addr_sk", Integer),
            ("ws_web_page_sk", Integer),
            ("ws_web_site_sk", Integer),
            ("ws_ship_mode_sk", Integer),
            ("ws_warehouse_sk", Integer),
            ("ws_promo_sk", Integer),
            ("ws_order_number", Integer),
            ("ws_quantity", Integer),
            ("ws_wholesale_cost", Decimal(7, 2)),
            ("ws_list_price", Decimal(7, 2)),
            ("ws_sales_price", Decimal(7, 2)),
            ("ws_ext_discount_amt", Decimal(7, 2)),
            ("ws_ext_sales_price", Decimal(7, 2)),
            ("ws_ext_wholesale_cost", Decimal(7, 2)),
            ("ws_ext_list_price", Decimal(7, 2)),
            ("ws_ext_tax", Decimal(7, 2)),
            ("ws_coupon_amt", Decimal(7, 2)),
            ("ws_ext_ship_cost", Decimal(7, 2)),
            ("ws_net_paid", Decimal(7, 2)),
            ("ws_net_paid_inc_tax", Decimal(7, 2)),
            ("ws_net_paid_inc_ship", Decimal(7, 2)),
            ("ws_net_paid_inc_ship_tax", Decimal(7, 2)),
            ("ws_net_profit", Decimal(7, 2)),
        ],
    },
    TableSchema {
        name: "web_site",
        columns: &[
            ("web_site_sk", Integer),
            ("web_site_id", Char(16)),
            ("web_rec_start_date", Date),
            ("web_rec_end_date", Date),
            ("web_name", Varchar(50)),
            ("web_open_date_sk", Integer),
            ("web_close_date_sk", Integer),
            ("web_class", Varchar(50)),
            ("web_manager", Varchar(40)),
            ("web_mkt_id", Integer),
            ("web_mkt_class", Varchar(50)),
            ("web_mkt_desc", Varchar(100)),
            ("web_market_manager", Varchar(40)),
            ("web_company_id", Integer),
            ("web_company_name", Char(50)),
            ("web_street_number", Char(10)),
            ("web_street_name", Varchar(60)),
            ("web_street_type", Char(15)),
            ("web_suite_number", Char(10)),
            ("web_city", Varchar(60)),
            ("web_county", Varchar(30)),
            ("web_state", Char(2)),
            ("web_zip", Char(10)),
            ("web_country", Varchar(20)),
            ("web_gmt_offset", Decimal(5, 2)),
            ("web_tax_percentage", Decimal(5, 2)),
        ],
    },
];

/// The schema of `table`, if it is one of the 24.
pub fn table_schema(table: &str) -> Option<&'static TableSchema> {
    SCHEMAS.iter().find(|t| t.name == table)
}

/// The table whose surrogate keys a `_sk` column holds, by the DDL's naming: the column's
/// distinct values are at most that table's rows. `cd_demo_sk` and `hd_demo_sk` are the two
/// keys the suffix alone cannot tell apart; they come first.
const KEY_DOMAINS: [(&str, &str); 20] = [
    ("cd_demo_sk", "customer_demographics"),
    ("hd_demo_sk", "household_demographics"),
    ("_cdemo_sk", "customer_demographics"),
    ("_hdemo_sk", "household_demographics"),
    ("_addr_sk", "customer_address"),
    ("_address_sk", "customer_address"),
    ("_date_sk", "date_dim"),
    ("_time_sk", "time_dim"),
    ("_item_sk", "item"),
    ("_customer_sk", "customer"),
    ("_store_sk", "store"),
    ("_promo_sk", "promotion"),
    ("_warehouse_sk", "warehouse"),
    ("_ship_mode_sk", "ship_mode"),
    ("_call_center_sk", "call_center"),
    ("_catalog_page_sk", "catalog_page"),
    ("_web_page_sk", "web_page"),
    ("web_site_sk", "web_site"),
    ("_reason_sk", "reason"),
    ("_income_band_sk", "income_band"),
];

/// The table a key column refers to (its own table for a primary key), if it is a key.
pub fn key_domain(column: &str) -> Option<&'static str> {
    KEY_DOMAINS
        .iter()
        .find(|(suffix, _)| column.ends_with(suffix))
        .map(|&(_, table)| table)
}

/// The Arrow type a TPC-DS column is read as.
fn arrow_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Integer => DataType::Int32,
        ColumnType::Decimal(p, s) => DataType::Decimal128(p, s),
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Time => DataType::Utf8,
        ColumnType::Date => DataType::Date32,
    }
}

/// The table's Arrow schema: TPC-DS types, every column nullable (empty field = NULL).
pub fn arrow_schema(table: &TableSchema) -> Schema {
    Schema::new(
        table
            .columns
            .iter()
            .map(|(name, ty)| Field::new(*name, arrow_type(*ty), true))
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::data::{self, TABLES};

    /// `(table, column prefix, column count)` as the specification gives them.
    const EXPECTED: [(&str, &str, usize); 24] = [
        ("call_center", "cc_", 31),
        ("catalog_page", "cp_", 9),
        ("catalog_returns", "cr_", 27),
        ("catalog_sales", "cs_", 34),
        ("customer", "c_", 18),
        ("customer_address", "ca_", 13),
        ("customer_demographics", "cd_", 9),
        ("date_dim", "d_", 28),
        ("household_demographics", "hd_", 5),
        ("income_band", "ib_", 3),
        ("inventory", "inv_", 4),
        ("item", "i_", 22),
        ("promotion", "p_", 19),
        ("reason", "r_", 3),
        ("ship_mode", "sm_", 6),
        ("store", "s_", 29),
        ("store_returns", "sr_", 20),
        ("store_sales", "ss_", 23),
        ("time_dim", "t_", 10),
        ("warehouse", "w_", 14),
        ("web_page", "wp_", 14),
        ("web_returns", "wr_", 24),
        ("web_sales", "ws_", 34),
        ("web_site", "web_", 26),
    ];

    #[test]
    fn tables_are_the_24_of_data_in_order() {
        let names: Vec<&str> = SCHEMAS.iter().map(|t| t.name).collect();
        assert_eq!(names, TABLES);
        let expected: Vec<&str> = EXPECTED.iter().map(|e| e.0).collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn column_counts_match_the_specification() {
        for (schema, &(name, _, count)) in SCHEMAS.iter().zip(&EXPECTED) {
            assert_eq!(schema.columns.len(), count, "{name}");
        }
        let total: usize = SCHEMAS.iter().map(|t| t.columns.len()).sum();
        assert_eq!(total, 425);
    }

    #[test]
    fn columns_carry_their_table_prefix() {
        for (schema, &(_, prefix, _)) in SCHEMAS.iter().zip(&EXPECTED) {
            for (column, _) in schema.columns {
                assert!(column.starts_with(prefix), "{}.{column}", schema.name);
            }
        }
    }

    #[test]
    fn column_names_are_unique_across_all_tables() {
        let mut seen = HashSet::new();
        for schema in &SCHEMAS {
            for (column, _) in schema.columns {
                assert!(seen.insert(*column), "duplicate column {column}");
            }
        }
    }

    #[test]
    fn first_column_is_an_integer_key() {
        for schema in &SCHEMAS {
            let (column, ty) = schema.columns[0];
            assert!(column.ends_with("_sk"), "{}.{column}", schema.name);
            assert_eq!(ty, Integer, "{}.{column}", schema.name);
        }
    }

    #[test]
    fn every_key_column_has_a_domain_and_a_table_its_own_first_key() {
        for schema in &SCHEMAS {
            for (column, _) in schema.columns {
                if column.ends_with("_sk") {
                    let domain = key_domain(column).unwrap_or_else(|| panic!("{column}"));
                    assert!(table_schema(domain).is_some(), "{column} -> {domain}");
                }
            }
        }
        // A dimension's first column is its own key; a fact table's is a date key.
        for (table, first) in [
            ("customer_demographics", "cd_demo_sk"),
            ("web_site", "web_site_sk"),
        ] {
            assert_eq!(table_schema(table).unwrap().columns[0].0, first);
            assert_eq!(key_domain(first), Some(table));
        }
        assert_eq!(key_domain("ss_sold_date_sk"), Some("date_dim"));
        assert_eq!(
            key_domain("c_current_hdemo_sk"),
            Some("household_demographics")
        );
        assert_eq!(key_domain("sr_return_time_sk"), Some("time_dim"));
        assert_eq!(key_domain("ws_web_site_sk"), Some("web_site"));
        assert_eq!(key_domain("ss_ticket_number"), None);
    }

    #[test]
    fn types_spot_checks() {
        let ty = |table: &str, column: &str| {
            let schema = table_schema(table).unwrap();
            schema.columns.iter().find(|c| c.0 == column).unwrap().1
        };
        assert_eq!(ty("date_dim", "d_date"), Date);
        assert_eq!(ty("date_dim", "d_date_id"), Char(16));
        assert_eq!(ty("item", "i_current_price"), Decimal(7, 2));
        assert_eq!(ty("item", "i_item_desc"), Varchar(200));
        assert_eq!(ty("call_center", "cc_gmt_offset"), Decimal(5, 2));
        assert_eq!(ty("customer_address", "ca_gmt_offset"), Decimal(5, 2));
        assert_eq!(ty("customer", "c_last_review_date_sk"), Integer);
        assert_eq!(ty("inventory", "inv_quantity_on_hand"), Integer);
        assert_eq!(ty("warehouse", "w_warehouse_sq_ft"), Integer);
        assert_eq!(ty("time_dim", "t_time"), Integer);
        assert_eq!(ty("promotion", "p_cost"), Decimal(15, 2));
        assert_eq!(ty("store_sales", "ss_net_profit"), Decimal(7, 2));
        assert!(table_schema("dbgen_version").is_none());
    }

    /// The generator's own column list (the header `tpcdsgen` would write) has the same
    /// names in the same order, so positions in the flat files line up with `columns`.
    #[test]
    fn names_match_the_generator() {
        for schema in &SCHEMAS {
            let table = data::parse_table(schema.name).unwrap();
            let header = tpcdsgen::csv::csv_header(table, ',');
            let generated: Vec<&str> = header.split(',').collect();
            let ours: Vec<&str> = schema.columns.iter().map(|c| c.0).collect();
            assert_eq!(ours, generated, "{}", schema.name);
            assert_eq!(data::column_count(schema.name).unwrap(), ours.len());
        }
    }
}
