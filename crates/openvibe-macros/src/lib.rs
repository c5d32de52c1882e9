//! Procedural macros of openvibe. Use them through `openvibe-primitives`
//! (or the `openvibe` facade), which re-exports them next to the traits the
//! generated code implements.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, FnArg, ItemFn, Lit, Meta, Pat, ReturnType, Token, Type};

/// Turn a plain function into an `openvibe_primitives::Tool`.
///
/// ```ignore
/// /// Search the CRM for contacts and deals.
/// #[tool(params(query = "Words to look for"), action = "read_crm")]
/// async fn search_crm(query: String, limit: Option<u32>) -> Result<String, MyError> { ... }
/// // generates `SearchCrmArgs` (the argument struct, deriving `Deserialize`
/// // and `JsonSchema`) and `SearchCrm` (a unit struct implementing `Tool`).
/// ```
///
/// - The description is the doc comment (or `description = "..."`).
/// - The input schema comes from the argument types; `Option<T>` arguments
///   are optional, all others required.
/// - Options: `name = "..."` (default: the function name),
///   `action = "..."` (the authority action the tool performs),
///   `params(arg = "description", ...)`, `sequential` (never run concurrently),
///   `crate = "path"` (where `openvibe_primitives` is, default `::openvibe_primitives`).
/// - The function may be sync or async and return any `Serialize` value or a
///   `Result<T: Serialize, E: Display>`; an `Err` reaches the model as an
///   error result.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

#[derive(Default)]
struct Options {
    name: Option<String>,
    description: Option<String>,
    action: Option<String>,
    sequential: bool,
    krate: Option<syn::Path>,
    params: Vec<(syn::Ident, String)>,
}

fn lit_str(expr: &Expr) -> syn::Result<String> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.value()),
        other => Err(syn::Error::new_spanned(other, "expected a string literal")),
    }
}

fn parse_options(attr: TokenStream2) -> syn::Result<Options> {
    let mut opts = Options::default();
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    for meta in metas {
        match &meta {
            Meta::Path(p) if p.is_ident("sequential") => opts.sequential = true,
            Meta::NameValue(nv) => {
                let value = lit_str(&nv.value)?;
                if nv.path.is_ident("name") {
                    opts.name = Some(value);
                } else if nv.path.is_ident("description") {
                    opts.description = Some(value);
                } else if nv.path.is_ident("action") {
                    opts.action = Some(value);
                } else if nv.path.is_ident("crate") {
                    opts.krate = Some(syn::parse_str(&value)?);
                } else {
                    return Err(syn::Error::new_spanned(
                        &nv.path,
                        "unknown option; expected name, description, action, crate, params(...) or sequential",
                    ));
                }
            }
            Meta::List(list) if list.path.is_ident("params") => {
                let inner = Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated
                    .parse2(list.tokens.clone())?;
                for nv in inner {
                    let ident = nv.path.get_ident().cloned().ok_or_else(|| {
                        syn::Error::new_spanned(&nv.path, "expected an argument name")
                    })?;
                    opts.params.push((ident, lit_str(&nv.value)?));
                }
            }
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "unknown option; expected name, description, action, crate, params(...) or sequential",
                ));
            }
        }
    }
    Ok(opts)
}

/// The path of `openvibe_primitives` as the calling crate sees it: its own
/// dependency (possibly renamed), or the `openvibe` facade's re-export.
fn primitives_path() -> syn::Path {
    use proc_macro_crate::{FoundCrate, crate_name};
    let ident = |name: &str| syn::Ident::new(name, proc_macro2::Span::call_site());
    match crate_name("openvibe-primitives") {
        // Inside the crate itself, generated code only appears in its tests,
        // examples and doc tests, which see it as an external crate.
        Ok(FoundCrate::Itself) => return syn::parse_quote!(::openvibe_primitives),
        Ok(FoundCrate::Name(name)) => {
            let name = ident(&name);
            return syn::parse_quote!(::#name);
        }
        Err(_) => {}
    }
    match crate_name("openvibe") {
        Ok(FoundCrate::Name(name)) => {
            let name = ident(&name);
            syn::parse_quote!(::#name::primitives)
        }
        _ => syn::parse_quote!(::openvibe_primitives),
    }
}

fn doc_comment(func: &ItemFn) -> String {
    let lines: Vec<String> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => lit_str(&nv.value).ok(),
            _ => None,
        })
        .map(|line| line.trim().to_owned())
        .collect();
    lines.join("\n").trim().to_owned()
}

fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect::<String>()
            })
        })
        .collect()
}

fn returns_result(ret: &ReturnType) -> bool {
    match ret {
        ReturnType::Type(_, ty) => match ty.as_ref() {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|seg| seg.ident == "Result"),
            _ => false,
        },
        ReturnType::Default => false,
    }
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let opts = parse_options(attr)?;
    let func: ItemFn = syn::parse2(item)?;
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "#[tool] functions cannot be generic",
        ));
    }
    let description = match opts.description.clone() {
        Some(d) => d,
        None => {
            let doc = doc_comment(&func);
            if doc.is_empty() {
                return Err(syn::Error::new_spanned(
                    &sig.ident,
                    "#[tool] needs a doc comment (or `description = \"...\"`): it becomes the tool's description",
                ));
            }
            doc
        }
    };

    let mut arg_names = Vec::new();
    let mut arg_types = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Typed(pat_type) => match pat_type.pat.as_ref() {
                Pat::Ident(ident) => {
                    arg_names.push(ident.ident.clone());
                    arg_types.push(pat_type.ty.as_ref().clone());
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "#[tool] arguments must be plain names",
                    ));
                }
            },
            FnArg::Receiver(r) => {
                return Err(syn::Error::new_spanned(
                    r,
                    "#[tool] works on free functions; implement `Tool` by hand for methods",
                ));
            }
        }
    }
    for (ident, _) in &opts.params {
        if !arg_names.contains(ident) {
            return Err(syn::Error::new_spanned(
                ident,
                format!("`{ident}` is not an argument of this function"),
            ));
        }
    }
    let arg_docs: Vec<TokenStream2> = arg_names
        .iter()
        .map(|name| {
            opts.params
                .iter()
                .find(|(ident, _)| ident == name)
                .map(|(_, doc)| quote!(#[doc = #doc]))
                .unwrap_or_default()
        })
        .collect();

    let krate = opts.krate.clone().unwrap_or_else(primitives_path);
    let fn_ident = &sig.ident;
    let vis = &func.vis;
    let tool_name = opts.name.clone().unwrap_or_else(|| fn_ident.to_string());
    let base = pascal_case(&fn_ident.to_string());
    let struct_ident = syn::Ident::new(&base, fn_ident.span());
    let args_ident = format_ident!("{}Args", base);
    let serde_path = quote!(#krate::__private::serde).to_string();
    let schemars_path = quote!(#krate::__private::schemars).to_string();
    let call_await = if sig.asyncness.is_some() {
        quote!(.await)
    } else {
        quote!()
    };
    let convert = if returns_result(&sig.output) {
        quote! {
            match out {
                ::core::result::Result::Ok(value) => #krate::tool_output(value),
                ::core::result::Result::Err(err) => ::core::result::Result::Err(
                    #krate::ToolError::new(::std::string::ToString::to_string(&err)),
                ),
            }
        }
    } else {
        quote!(#krate::tool_output(out))
    };
    let action = match &opts.action {
        Some(a) => quote!(::core::option::Option::Some(#a)),
        None => quote!(::core::option::Option::None),
    };
    let parallel_safe = !opts.sequential;
    let struct_doc = format!("Tool `{tool_name}` generated by `#[tool]` from `{fn_ident}`.");

    Ok(quote! {
        #func

        #[allow(missing_docs)]
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
        #vis struct #args_ident {
            #( #arg_docs pub #arg_names: #arg_types, )*
        }

        #[doc = #struct_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #struct_ident;

        #[#krate::__private::async_trait]
        impl #krate::Tool for #struct_ident {
            fn name(&self) -> &str {
                #tool_name
            }

            fn description(&self) -> &str {
                #description
            }

            fn input_schema(&self) -> #krate::__private::serde_json::Value {
                static SCHEMA: ::std::sync::OnceLock<#krate::__private::serde_json::Value> =
                    ::std::sync::OnceLock::new();
                SCHEMA.get_or_init(#krate::input_schema_for::<#args_ident>).clone()
            }

            fn action(&self) -> ::core::option::Option<&str> {
                #action
            }

            fn parallel_safe(&self) -> bool {
                #parallel_safe
            }

            async fn call(
                &self,
                input: #krate::__private::serde_json::Value,
            ) -> ::core::result::Result<::std::string::String, #krate::ToolError> {
                let args: #args_ident = #krate::__private::serde_json::from_value(input)
                    .map_err(|e| #krate::ToolError::invalid_arguments(#tool_name, e))?;
                let #args_ident { #( #arg_names ),* } = args;
                let out = #fn_ident( #( #arg_names ),* ) #call_await;
                #convert
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::pascal_case;

    #[test]
    fn names_become_pascal_case() {
        assert_eq!(pascal_case("search_crm"), "SearchCrm");
        assert_eq!(pascal_case("web__search_"), "WebSearch");
        assert_eq!(pascal_case("x"), "X");
    }
}

/// Turn a function that builds the user message into an `LlmNode`
/// constructor; the doc comment is the system prompt.
///
/// ```ignore
/// /// You are a lead qualification specialist.
/// #[llm_node(model = "sonnet", output_key = "score", temperature = 0.3,
///            memory_scope(domain = "revenue", entity_key = "company"))]
/// fn qualify_lead(state: &State) -> Result<String, StateError> {
///     Ok(format!("Score this lead: {}", state.require_str("lead")?))
/// }
/// // `qualify_lead()` now returns the `LlmNode` named "qualify_lead".
/// ```
///
/// Options: `name`, `model`, `temperature`, `max_tokens`, `output_key`,
/// `token_budget`, `action`, `memory_scope(domain, entity, entity_key, query, tags = [...])`,
/// `crate = "path"`. The function takes `&State` and returns `String` or
/// `Result<String, StateError>`.
#[proc_macro_attribute]
pub fn llm_node(attr: TokenStream, item: TokenStream) -> TokenStream {
    match node::expand(node::Kind::Llm, attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// Like [`llm_node`](macro@llm_node), for an `AgentNode`: also
/// `tools = [ToolA, ToolB]` (values implementing `Tool`) and `max_turns`.
#[proc_macro_attribute]
pub fn agent_node(attr: TokenStream, item: TokenStream) -> TokenStream {
    match node::expand(node::Kind::Agent, attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

mod node {
    //! Expansion of `#[llm_node]` and `#[agent_node]`.

    use proc_macro2::TokenStream as TokenStream2;
    use quote::{format_ident, quote};
    use syn::parse::Parser;
    use syn::punctuated::Punctuated;
    use syn::{Expr, ItemFn, Meta, Token};

    use super::{doc_comment, lit_str, returns_result};

    /// Which node the function becomes.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        Llm,
        Agent,
    }

    pub fn expand(kind: Kind, attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
        let mut func: ItemFn = syn::parse2(item)?;
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
        let mut krate: syn::Path = super::primitives_path();
        let mut name = func.sig.ident.to_string();
        let mut calls = Vec::new();
        let mut scope_calls = Vec::new();
        for meta in metas {
            match &meta {
                Meta::NameValue(nv) => {
                    let key = nv
                        .path
                        .get_ident()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let value = &nv.value;
                    match key.as_str() {
                        "crate" => krate = syn::parse_str(&lit_str(value)?)?,
                        "name" => name = lit_str(value)?,
                        "model" | "output_key" | "action" => {
                            let method = format_ident!("{}", key);
                            calls.push(quote!(.#method(#value)));
                        }
                        "temperature" | "max_tokens" | "token_budget" => {
                            let method = format_ident!("{}", key);
                            calls.push(quote!(.#method(#value)));
                        }
                        "max_turns" if kind == Kind::Agent => {
                            calls.push(quote!(.max_turns(#value)))
                        }
                        "tools" if kind == Kind::Agent => {
                            let Expr::Array(array) = value else {
                                return Err(syn::Error::new_spanned(
                                    value,
                                    "expected `tools = [ToolA, ToolB]`",
                                ));
                            };
                            for tool in &array.elems {
                                calls.push(quote!(.tool(#tool)));
                            }
                        }
                        _ => {
                            return Err(syn::Error::new_spanned(
                                &nv.path,
                                "unknown option; see the documentation of #[llm_node] / #[agent_node]",
                            ));
                        }
                    }
                }
                Meta::List(list) if list.path.is_ident("memory_scope") => {
                    let inner = Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated
                        .parse2(list.tokens.clone())?;
                    for nv in inner {
                        let key = nv
                            .path
                            .get_ident()
                            .map(ToString::to_string)
                            .unwrap_or_default();
                        let value = &nv.value;
                        let method = match key.as_str() {
                            "domain" | "entity" | "query" | "entity_from_key" | "tags" => {
                                format_ident!("{}", key)
                            }
                            "entity_key" => format_ident!("entity_from_key"),
                            _ => {
                                return Err(syn::Error::new_spanned(
                                    &nv.path,
                                    "memory_scope takes domain, entity, entity_key, query and tags",
                                ));
                            }
                        };
                        scope_calls.push(quote!(.#method(#value)));
                    }
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "unknown option; see the documentation of #[llm_node] / #[agent_node]",
                    ));
                }
            }
        }
        let prompt = doc_comment(&func);
        if prompt.is_empty() {
            return Err(syn::Error::new_spanned(
                &func.sig.ident,
                "the node's doc comment is its system prompt; add one",
            ));
        }
        if func.sig.inputs.len() != 1 {
            return Err(syn::Error::new_spanned(
                &func.sig.inputs,
                "a node function takes one argument: the state (`state: &State`)",
            ));
        }
        let vis = func.vis.clone();
        let outer = func.sig.ident.clone();
        let node_type = match kind {
            Kind::Llm => quote!(#krate::LlmNode),
            Kind::Agent => quote!(#krate::AgentNode),
        };
        func.sig.ident = format_ident!("__user_message");
        func.attrs.retain(|a| !a.path().is_ident("doc"));
        func.vis = syn::Visibility::Inherited;
        let user = if returns_result(&func.sig.output) {
            quote!(__user_message)
        } else {
            quote!(|state: &#krate::protocols::State| ::core::result::Result::Ok(__user_message(state)))
        };
        let scope = if scope_calls.is_empty() {
            quote!()
        } else {
            quote!(.memory_scope(#krate::ScopeSpec::new() #(#scope_calls)*))
        };
        let doc = format!("The `{name}` node (system prompt: its doc comment).");
        Ok(quote! {
            #[doc = #doc]
            #vis fn #outer() -> #node_type {
                #func
                #node_type::new(#name, #prompt, #user) #(#calls)* #scope
            }
        })
    }
}
