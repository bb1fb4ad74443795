//! Multipart uploads in the local store.
//!
//! ```text
//! buckets/<bucket>/uploads/<id>/upload.json         key, owner, type, metadata, start time
//! buckets/<bucket>/uploads/<id>/<nnnnn>.<md5>       one uploaded part (number, hex MD5)
//! ```
//!
//! A part's number and MD5 live in its file name, so a part is committed by one rename, and
//! listing parts or checking a completion request needs no second file that could disagree
//! with the data. Uploading a part number again renames the new file in, then removes the
//! other files of that number (under the store's commit lock, so two racing uploads of one
//! part leave exactly one).
//!
//! Completion assembles the parts into a temporary file, then claims the upload by renaming
//! its directory away (a concurrent abort or second completion then finds nothing), then
//! commits the object like a PUT. A completion request that names a wrong part fails before
//! the claim and leaves the upload as it was, so the client can retry.

use std::collections::BTreeMap;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{
    hex, now_ms, validate_key, At, LocalStore, NewObject, ObjectMeta, Result, StoreError,
    StoredHeaders, WriteCondition,
};

/// S3's smallest part, except for the last one.
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;

/// S3's highest part number.
pub const MAX_PART_NUMBER: i32 = 10_000;

/// What `upload.json` records about an upload in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Upload {
    pub id: String,
    pub key: String,
    pub owner: String,
    pub content_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub headers: StoredHeaders,
    pub initiated_unix_ms: u64,
}

/// One stored part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    pub number: i32,
    /// Hex MD5 of the part.
    pub etag: String,
    pub size: u64,
    pub modified_unix_ms: u64,
}

/// One page of a bucket's uploads.
#[derive(Debug, Default)]
pub struct UploadListing {
    pub uploads: Vec<Upload>,
    pub common_prefixes: Vec<String>,
    pub truncated: bool,
    /// Where the next page starts: (key marker, upload id marker).
    pub next: Option<(String, String)>,
}

fn part_file_name(number: i32, etag: &str) -> String {
    format!("{number:05}.{etag}")
}

/// Reads `<nnnnn>.<md5>` back; anything else in the directory (upload.json) is not a part.
fn parse_part_file_name(name: &str) -> Option<(i32, &str)> {
    let (n, etag) = name.split_once('.')?;
    if n.len() != 5 || etag.len() != 32 || !etag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((n.parse().ok()?, etag))
}

/// Upload ids are 32 lowercase hex digits: anything else cannot name an upload directory.
fn valid_upload_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_part_number(number: i32) -> Result<()> {
    if (1..=MAX_PART_NUMBER).contains(&number) {
        Ok(())
    } else {
        Err(StoreError::InvalidPartNumber(number))
    }
}

impl LocalStore {
    fn uploads_dir(&self, bucket: &str) -> Result<PathBuf> {
        Ok(self.check_bucket(bucket)?.join("uploads"))
    }

    /// The upload's directory and record, checking that it is an upload of `key`.
    fn upload_dir(&self, bucket: &str, key: &str, id: &str) -> Result<(PathBuf, Upload)> {
        if !valid_upload_id(id) {
            return Err(StoreError::NoSuchUpload);
        }
        let dir = self.uploads_dir(bucket)?.join(id);
        let path = dir.join("upload.json");
        let text =
            fs::read(&path).map_err(|e| super::not_found_as(e, &path, StoreError::NoSuchUpload))?;
        let upload: Upload = serde_json::from_slice(&text)?;
        if upload.key != key {
            return Err(StoreError::NoSuchUpload);
        }
        Ok((dir, upload))
    }

    /// Whether `id` is an upload of `key` in progress: `NoSuchUpload` if not.
    pub fn check_upload(&self, bucket: &str, key: &str, id: &str) -> Result<()> {
        self.upload_dir(bucket, key, id).map(drop)
    }

    /// Starts an upload of `key` and returns its id.
    pub fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        owner: &str,
        content_type: Option<String>,
        metadata: BTreeMap<String, String>,
        headers: StoredHeaders,
    ) -> Result<Upload> {
        validate_key(key)?;
        let uploads = self.uploads_dir(bucket)?;
        // Unique (the store's counter) and unguessable (a per-process random hasher), so
        // one client cannot complete another's upload by counting.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write(self.unique_name().as_bytes());
        let seed = format!("{}-{}", self.unique_name(), hasher.finish());
        let id = hex(&Sha256::digest(seed.as_bytes())[..16]);
        let upload = Upload {
            id: id.clone(),
            key: key.to_string(),
            owner: owner.to_string(),
            content_type,
            metadata,
            headers,
            initiated_unix_ms: now_ms(),
        };
        let staging = self.tmp_path();
        fs::create_dir_all(&staging).at(&staging)?;
        let upload_json = staging.join("upload.json");
        fs::write(&upload_json, serde_json::to_vec(&upload)?).at(&upload_json)?;
        fs::create_dir_all(&uploads).at(&uploads)?;
        fs::rename(&staging, uploads.join(&id)).at(&staging)?;
        Ok(upload)
    }

    /// Makes a fully written and synced temporary file part `number` of the upload.
    pub fn commit_part(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        number: i32,
        temp: &Path,
        etag: &str,
    ) -> Result<()> {
        let found = check_part_number(number).and_then(|()| self.upload_dir(bucket, key, id));
        let (dir, _) = match found {
            Ok(found) => found,
            Err(e) => {
                let _ = fs::remove_file(temp);
                return Err(e);
            }
        };
        let name = part_file_name(number, etag);
        let _guard = self.commit_lock();
        fs::rename(temp, dir.join(&name)).map_err(|e| {
            let _ = fs::remove_file(temp);
            super::not_found_as(e, temp, StoreError::NoSuchUpload)
        })?;
        for other in self.list_parts(bucket, key, id)? {
            if other.number == number && other.etag != etag {
                let _ = fs::remove_file(dir.join(part_file_name(number, &other.etag)));
            }
        }
        Ok(())
    }

    /// The upload's parts in part-number order.
    pub fn list_parts(&self, bucket: &str, key: &str, id: &str) -> Result<Vec<PartInfo>> {
        let (dir, _) = self.upload_dir(bucket, key, id)?;
        let mut parts = Vec::new();
        for entry in fs::read_dir(&dir)
            .map_err(|e| super::not_found_as(e, &dir, StoreError::NoSuchUpload))?
        {
            let entry = entry.at(&dir)?;
            let name = entry.file_name();
            let Some((number, etag)) = name.to_str().and_then(parse_part_file_name) else {
                continue;
            };
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // replaced meanwhile
                Err(e) => return Err(e).at(&entry.path()),
            };
            let modified_unix_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64);
            parts.push(PartInfo {
                number,
                etag: etag.to_string(),
                size: meta.len(),
                modified_unix_ms,
            });
        }
        parts.sort_by(|a, b| (a.number, &a.etag).cmp(&(b.number, &b.etag)));
        Ok(parts)
    }

    /// Assembles the named parts (number, hex MD5) into `key` and ends the upload. The
    /// object's ETag is the MD5 of the parts' binary MD5s, then `-` and the part count.
    /// A `condition` that does not hold leaves the upload in place.
    pub fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        requested: &[(i32, String)],
        condition: WriteCondition,
    ) -> Result<ObjectMeta> {
        let (dir, upload) = self.upload_dir(bucket, key, id)?;
        if requested.is_empty() {
            return Err(StoreError::MalformedXml(
                "the CompleteMultipartUpload request names no parts".into(),
            ));
        }
        if requested.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(StoreError::InvalidPartOrder);
        }
        let stored = self.list_parts(bucket, key, id)?;
        let mut files = Vec::with_capacity(requested.len());
        let mut md5_of_md5s = Md5::new();
        let mut size = 0u64;
        for (i, (number, etag)) in requested.iter().enumerate() {
            let etag = etag.trim_matches('"').to_ascii_lowercase();
            let part = stored
                .iter()
                .find(|p| p.number == *number && p.etag == etag)
                .ok_or(StoreError::InvalidPart(*number))?;
            let last = i + 1 == requested.len();
            if !last && part.size < MIN_PART_SIZE {
                return Err(StoreError::EntityTooSmall(*number, part.size));
            }
            let binary: Vec<u8> = (0..16)
                .filter_map(|j| u8::from_str_radix(&etag[2 * j..2 * j + 2], 16).ok())
                .collect();
            md5_of_md5s.update(&binary);
            size += part.size;
            files.push(dir.join(part_file_name(*number, &etag)));
        }

        let (temp, mut out) = self.create_temp()?;
        // The part being read when it failed, or the assembled file.
        let assembled = (|| {
            for f in &files {
                let mut part = fs::File::open(f).map_err(|e| (e, f.as_path()))?;
                io::copy(&mut part, &mut out).map_err(|e| (e, f.as_path()))?;
            }
            out.sync_all().map_err(|e| (e, temp.as_path()))
        })();
        drop(out);
        if let Err((e, path)) = assembled {
            let _ = fs::remove_file(&temp);
            return Err(super::not_found_as(e, path, StoreError::NoSuchUpload));
        }

        // Claim the upload: from here on an abort or a second completion finds nothing.
        let claimed = self.tmp_path();
        if let Err(e) = fs::rename(&dir, &claimed) {
            let _ = fs::remove_file(&temp);
            return Err(super::not_found_as(e, &dir, StoreError::NoSuchUpload));
        }
        let new = NewObject {
            size,
            etag: format!("{}-{}", hex(&md5_of_md5s.finalize()), requested.len()),
            content_type: upload.content_type,
            metadata: upload.metadata,
            headers: upload.headers,
            condition,
        };
        let committed = self.commit_object(bucket, key, &temp, new);
        match committed {
            // The object was not written: give the upload back for a retry.
            Err(StoreError::PreconditionFailed | StoreError::NoSuchKey) => {
                let _ = fs::rename(&claimed, &dir);
            }
            _ => {
                let _ = fs::remove_dir_all(&claimed);
            }
        }
        committed
    }

    /// Ends the upload and discards its parts.
    pub fn abort_upload(&self, bucket: &str, key: &str, id: &str) -> Result<()> {
        let (dir, _) = self.upload_dir(bucket, key, id)?;
        let grave = self.tmp_path();
        fs::rename(&dir, &grave)
            .map_err(|e| super::not_found_as(e, &dir, StoreError::NoSuchUpload))?;
        fs::remove_dir_all(&grave).at(&grave)?;
        Ok(())
    }

    /// One page of the bucket's uploads whose keys start with `prefix`, ordered by key and
    /// then start time, after the (key, upload id) position `after`; keys rolled up into
    /// common prefixes at `delimiter`; at most `max` entries.
    pub fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        after: (Option<&str>, Option<&str>),
        max: usize,
    ) -> Result<UploadListing> {
        let uploads_dir = self.uploads_dir(bucket)?;
        let mut all = Vec::new();
        let entries = match fs::read_dir(&uploads_dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(UploadListing::default()),
            Err(e) => return Err(e).at(&uploads_dir),
        };
        for entry in entries {
            let path = entry.at(&uploads_dir)?.path().join("upload.json");
            let text = match fs::read(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // ended meanwhile
                Err(e) => return Err(e).at(&path),
            };
            let upload: Upload = serde_json::from_slice(&text)?;
            if upload.key.starts_with(prefix) {
                all.push(upload);
            }
        }
        all.sort_by(|a, b| {
            (&a.key, a.initiated_unix_ms, &a.id).cmp(&(&b.key, b.initiated_unix_ms, &b.id))
        });

        // Resume: with only a key marker, after every upload of that key; with an upload id
        // marker too, after that upload.
        let start = match after {
            (Some(key), Some(id)) => all
                .iter()
                .position(|u| u.key == key && u.id == id)
                .map_or_else(|| all.partition_point(|u| u.key.as_str() <= key), |i| i + 1),
            (Some(key), None) => all.partition_point(|u| u.key.as_str() <= key),
            _ => 0,
        };
        let delimiter = delimiter.filter(|d| !d.is_empty());
        let mut page = UploadListing::default();
        let mut count = 0;
        let mut last_prefix: Option<String> = None;
        for upload in all.into_iter().skip(start) {
            let rolled = delimiter.and_then(|d| {
                upload.key[prefix.len()..]
                    .find(d)
                    .map(|i| upload.key[..prefix.len() + i + d.len()].to_string())
            });
            if rolled.is_some() && rolled == last_prefix {
                continue;
            }
            if count == max {
                page.truncated = true;
                break;
            }
            count += 1;
            match rolled {
                Some(p) => {
                    page.next = Some((p.clone(), String::new()));
                    last_prefix = Some(p.clone());
                    page.common_prefixes.push(p);
                }
                None => {
                    page.next = Some((upload.key.clone(), upload.id.clone()));
                    page.uploads.push(upload);
                }
            }
        }
        if !page.truncated {
            page.next = None;
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::super::tests::store;
    use super::*;

    fn upload_part(s: &LocalStore, id: &str, n: i32, data: &[u8]) -> String {
        let (temp, mut f) = s.create_temp().expect("temp");
        f.write_all(data).expect("write");
        let etag = hex(&Md5::digest(data));
        s.commit_part("bkt", "big", id, n, &temp, &etag)
            .expect("part");
        etag
    }

    #[test]
    fn parts_replace_assemble_and_end_the_upload() {
        let (s, dir) = store();
        s.create_bucket("bkt", "me").expect("bucket");
        let up = s
            .create_upload(
                "bkt",
                "big",
                "me",
                Some("text/csv".into()),
                BTreeMap::new(),
                StoredHeaders::default(),
            )
            .expect("create");
        assert!(valid_upload_id(&up.id));
        let a = vec![b'a'; MIN_PART_SIZE as usize];
        let stale = upload_part(&s, &up.id, 1, b"replaced");
        let e1 = upload_part(&s, &up.id, 1, &a);
        let e2 = upload_part(&s, &up.id, 2, b"tail");
        let parts = s.list_parts("bkt", "big", &up.id).expect("parts");
        assert_eq!(
            parts.iter().map(|p| (p.number, p.size)).collect::<Vec<_>>(),
            [(1, MIN_PART_SIZE), (2, 4)]
        );

        // Wrong requests leave the upload in place.
        let bad = |req: &[(i32, &str)]| {
            let req: Vec<_> = req.iter().map(|(n, e)| (*n, e.to_string())).collect();
            s.complete_upload("bkt", "big", &up.id, &req, WriteCondition::Always)
                .expect_err("refused")
        };
        assert!(matches!(bad(&[(1, &stale)]), StoreError::InvalidPart(1)));
        assert!(matches!(
            bad(&[(2, &e2), (1, &e1)]),
            StoreError::InvalidPartOrder
        ));
        assert!(matches!(bad(&[]), StoreError::MalformedXml(_)));

        let parts = [(1, format!("\"{e1}\"")), (2, e2.clone())];
        // A condition that does not hold leaves the upload for a retry.
        let refused = s.complete_upload("bkt", "big", &up.id, &parts, WriteCondition::IfPresent);
        assert!(matches!(refused, Err(StoreError::NoSuchKey)));
        let meta = s
            .complete_upload("bkt", "big", &up.id, &parts, WriteCondition::IfAbsent)
            .expect("complete");
        let mut md5s = Vec::new();
        md5s.extend_from_slice(&Md5::digest(&a));
        md5s.extend_from_slice(&Md5::digest(b"tail"));
        assert_eq!(meta.etag, format!("{}-2", hex(&Md5::digest(&md5s))));
        assert_eq!(meta.content_type.as_deref(), Some("text/csv"));
        let (_, path) = s.object_file("bkt", "big").expect("object");
        let mut want = a.clone();
        want.extend_from_slice(b"tail");
        assert_eq!(fs::read(path).expect("read"), want);
        assert!(matches!(
            s.list_parts("bkt", "big", &up.id),
            Err(StoreError::NoSuchUpload)
        ));
        fs::remove_dir_all(dir).expect("cleanup");
    }

    #[test]
    fn small_middle_parts_traversal_ids_and_abort() {
        let (s, dir) = store();
        s.create_bucket("bkt", "me").expect("bucket");
        let up = s
            .create_upload(
                "bkt",
                "big",
                "me",
                None,
                BTreeMap::new(),
                StoredHeaders::default(),
            )
            .expect("create");
        let e1 = upload_part(&s, &up.id, 1, b"small");
        let e2 = upload_part(&s, &up.id, 2, b"tail");
        let err = s
            .complete_upload(
                "bkt",
                "big",
                &up.id,
                &[(1, e1), (2, e2)],
                WriteCondition::Always,
            )
            .expect_err("too small");
        assert!(matches!(err, StoreError::EntityTooSmall(1, 5)));
        for bad_id in ["../../buckets", "", &up.id.to_uppercase()] {
            assert!(matches!(
                s.list_parts("bkt", "big", bad_id),
                Err(StoreError::NoSuchUpload)
            ));
        }
        assert!(matches!(
            s.list_parts("bkt", "other-key", &up.id),
            Err(StoreError::NoSuchUpload)
        ));
        s.abort_upload("bkt", "big", &up.id).expect("abort");
        assert!(matches!(
            s.abort_upload("bkt", "big", &up.id),
            Err(StoreError::NoSuchUpload)
        ));
        assert!(s.head_object("bkt", "big").is_err());
        fs::remove_dir_all(dir).expect("cleanup");
    }

    #[test]
    fn listing_uploads_in_pages() {
        let (s, dir) = store();
        s.create_bucket("bkt", "me").expect("bucket");
        let mut ids = Vec::new();
        for k in ["a/1", "a/2", "b", "b", "c"] {
            ids.push(
                s.create_upload(
                    "bkt",
                    k,
                    "me",
                    None,
                    BTreeMap::new(),
                    StoredHeaders::default(),
                )
                .expect("create")
                .id,
            );
        }
        let all = s
            .list_uploads("bkt", "", Some("/"), (None, None), 1000)
            .expect("all");
        assert_eq!(all.common_prefixes, ["a/"]);
        assert_eq!(
            all.uploads
                .iter()
                .map(|u| u.key.as_str())
                .collect::<Vec<_>>(),
            ["b", "b", "c"]
        );
        let p1 = s
            .list_uploads("bkt", "", None, (None, None), 3)
            .expect("page 1");
        assert!(p1.truncated);
        let (k, id) = p1.next.clone().expect("next");
        assert_eq!(k, "b");
        let p2 = s
            .list_uploads("bkt", "", None, (Some(&k), Some(&id)), 3)
            .expect("page 2");
        assert_eq!(
            p2.uploads
                .iter()
                .map(|u| u.key.as_str())
                .collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert!(!p2.truncated);
        let after_b = s
            .list_uploads("bkt", "", None, (Some("b"), None), 10)
            .expect("after b");
        assert_eq!(after_b.uploads.len(), 1);
        fs::remove_dir_all(dir).expect("cleanup");
    }

    #[test]
    fn part_names_round_trip() {
        let e = "0123456789abcdef0123456789abcdef";
        assert_eq!(parse_part_file_name(&part_file_name(42, e)), Some((42, e)));
        assert_eq!(parse_part_file_name("upload.json"), None);
        assert!(check_part_number(0).is_err() && check_part_number(10_001).is_err());
    }
}
